"""Claude on Bedrock as distiller: Converse with the card schema forced through a strict tool.

The model sees only the scrubbed, budgeted survey. Its card is validated twice (schema + pydantic, then
the card rules and the evidence check that can only downgrade `verified`); one repair turn sends the
reason back, a second failure raises DistillError for the caller to record.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from episodic.aws._calls import error_code, error_message, retried_call
from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.distill.prompt import DISTILL_SYSTEM_PROMPT, repair_message, survey_message
from episodic.kernel.errors import ConfigError, DistillError, InvalidCardError, RetryableDistillError
from episodic.kernel.models import Card, DistillerInfo, DistillUsage, Trajectory
from episodic.kernel.ports import Distiller, DistillResult

TOOL_NAME = "emit_card"

# USD per million tokens (input, output), keyed by a model-family substring of the model id.
DEFAULT_PRICING: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}

THROTTLE_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"})
_CONFIG_CODES = frozenset({"AccessDeniedException", "ResourceNotFoundException"})
# "<vendor>.<model>", "<geo>.<vendor>.<model>" (inference profile), or a full ARN
_MODEL_ID_RE = re.compile(r"^(?:arn:aws[\w-]*:bedrock:|(?:[a-z]{2,6}(?:-[a-z]+)?\.)?[a-z0-9-]+\.[\w.:-]+$)")
_PROFILE_HINT_RE = re.compile(r"on-demand throughput|inference profile", re.I)
# JSON-schema keywords Anthropic's strict (grammar-constrained) tools reject; enforced client-side instead.
_UNSUPPORTED_STRICT = ("minLength", "maxLength", "maxItems", "minItems", "default", "pattern")


def _model_id_help(model_id: str) -> str:
    return (
        f"Bedrock model id {model_id!r} cannot be invoked on demand: use the 'anthropic.'-prefixed "
        "model id through a cross-region inference profile, e.g. 'us.anthropic.claude-sonnet-4-6' "
        "(or 'eu.'/'jp.'/'global.'), set as EPISODIC_BEDROCK_MODEL_ID."
    )


def strict_tool_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Card.json_schema() without the keywords strict tools reject; their limits move into descriptions."""

    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: strip(v) for k, v in node.items() if k not in _UNSUPPORTED_STRICT}
        limits = []
        if "maxLength" in node:
            limits.append(f"at most {node['maxLength']} characters")
        if "maxItems" in node:
            limits.append(f"at most {node['maxItems']} items")
        if limits and isinstance(out.get("description"), str):
            out["description"] = f"{out['description']} ({', '.join(limits)})"
        return out

    return strip(copy.deepcopy(dict(schema)))  # type: ignore[no-any-return]


def tool_config() -> dict[str, Any]:
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": TOOL_NAME,
                    "description": "Record the memory card for the session described in the survey.",
                    "strict": True,
                    "inputSchema": {"json": strict_tool_schema(Card.json_schema())},
                }
            }
        ],
        "toolChoice": {"tool": {"name": TOOL_NAME}},
    }


def price_for(model_id: str, pricing: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    for family, prices in pricing.items():
        if family in model_id:
            return prices
    return None


class BedrockDistiller(Distiller):
    """Distills with Claude on Bedrock (Converse API, forced strict tool `emit_card`)."""

    def __init__(
        self,
        client: Any,
        model_id: str,
        max_tokens: int = 2000,
        pricing: Mapping[str, tuple[float, float]] | None = None,
        *,
        max_attempts: int = 5,
        base_delay: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not _MODEL_ID_RE.match(model_id or ""):
            raise ConfigError(_model_id_help(model_id))
        self.client = client
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.pricing = dict(DEFAULT_PRICING if pricing is None else pricing)
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep
        self.info = DistillerInfo(kind="bedrock", model=model_id)

    # ------------------------------------------------------------ one call

    def _converse(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        request = {
            "modelId": self.model_id,
            "system": [{"text": DISTILL_SYSTEM_PROMPT}],
            "messages": messages,
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": 0.0},
            "toolConfig": tool_config(),
        }
        try:
            response: dict[str, Any] = retried_call(
                lambda: self.client.converse(**request),
                "Bedrock",
                retry_codes=THROTTLE_CODES,
                attempts=self.max_attempts,
                base_delay=self.base_delay,
                sleep=self.sleep,
            )
            return response
        except RetryableDistillError:
            raise
        except Exception as exc:
            code = error_code(exc)
            if code is None:
                raise
            message = error_message(exc)
            if code == "ValidationException" and _PROFILE_HINT_RE.search(message):
                raise ConfigError(f"{_model_id_help(self.model_id)} (Bedrock said: {message})") from exc
            if code in _CONFIG_CODES:
                raise ConfigError(
                    f"Bedrock refused model {self.model_id!r} ({code}: {message}); check that model access "
                    "is enabled in this region and the role may call bedrock:InvokeModel on it"
                ) from exc
            raise DistillError(f"Bedrock {code}: {message}") from exc

    # ------------------------------------------------------------ the card

    @staticmethod
    def _tool_use(response: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        content = response.get("output", {}).get("message", {}).get("content", []) or []
        for block in content:
            tool_use = block.get("toolUse")
            if tool_use and tool_use.get("name") == TOOL_NAME:
                return content, tool_use
        return content, None

    def _check(
        self, response: Mapping[str, Any], trajectory: Trajectory
    ) -> tuple[Card | None, list[str], str, dict[str, Any] | None]:
        """(card, notes, reason-if-invalid, toolUse block)."""
        _, tool_use = self._tool_use(response)
        if tool_use is None:
            stop = response.get("stopReason", "")
            return None, [], f"no {TOOL_NAME} tool call in the reply (stopReason={stop})", None
        if response.get("stopReason") == "max_tokens":
            return None, [], "the reply was cut at the token limit; write shorter lines", tool_use
        try:
            card = parse_card_payload(tool_use.get("input", {}))
            card, notes = enforce_card(card, trajectory)
        except InvalidCardError as exc:
            return None, [], str(exc), tool_use
        return card, notes, "", tool_use

    def _add_usage(self, usage: DistillUsage, response: Mapping[str, Any]) -> None:
        tokens = response.get("usage", {}) or {}
        usage.input_tokens = (usage.input_tokens or 0) + int(tokens.get("inputTokens", 0))
        usage.output_tokens = (usage.output_tokens or 0) + int(tokens.get("outputTokens", 0))
        prices = price_for(self.model_id, self.pricing)
        if prices is not None:
            usage.cost_usd = round(
                (usage.input_tokens * prices[0] + usage.output_tokens * prices[1]) / 1_000_000, 6
            )

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        started = time.perf_counter()
        usage = DistillUsage()
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": survey_message(survey)}]}]
        reason = first_reason = ""
        for attempt in range(2):  # the first answer, then one repair turn
            response = self._converse(messages)
            self._add_usage(usage, response)
            card, notes, reason, tool_use = self._check(response, trajectory)
            if card is not None:
                usage.duration_ms = round((time.perf_counter() - started) * 1000, 1)
                if attempt:
                    notes = [f"repaired after: {first_reason}", *notes]
                return DistillResult(card=card, usage=usage, notes=notes)
            first_reason = first_reason or reason
            content, _ = self._tool_use(response)
            messages.append({"role": "assistant", "content": content or [{"text": "(no reply)"}]})
            if tool_use is not None:  # a toolUse must be answered by its toolResult
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "toolResult": {
                                    "toolUseId": tool_use["toolUseId"],
                                    "content": [{"text": repair_message(reason)}],
                                    "status": "error",
                                }
                            }
                        ],
                    }
                )
            else:
                messages.append({"role": "user", "content": [{"text": repair_message(reason)}]})
        raise DistillError(f"invalid card from {self.model_id} after one repair: {reason}")
