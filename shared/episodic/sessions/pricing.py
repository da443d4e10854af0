"""Prices used for cost estimates (USD, on-demand, us-east-1; docs/aws.md). Config, not logic."""

from __future__ import annotations

# per million tokens: (input, output)
MODEL_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4": (15.0, 75.0),
}
TITAN_EMBED_V2_PER_MTOK = 0.02
DISTILL_PROMPT_TOKENS = 900  # system prompt + schema sent with every survey
DISTILL_OUTPUT_TOKENS = 700  # a typical card


def model_prices(model_id: str) -> tuple[float, float] | None:
    """Prices for a Bedrock model or inference-profile id (matched on the model family)."""
    for family, prices in MODEL_PRICES_PER_MTOK.items():
        if family in model_id:
            return prices
    return None


def token_cost(model_id: str, input_tokens: int, output_tokens: int) -> float | None:
    prices = model_prices(model_id)
    if prices is None:
        return None
    return (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000
