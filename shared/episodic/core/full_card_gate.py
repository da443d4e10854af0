"""The full card's gate beyond topic: a small logistic model over signals that tell "answers this prompt"
from "a neighbour on the same topic".

The judge's probability alone says "relevant" for a shared topic, and a neighbour shares the topic; so a judged
hit becomes a full card only when this model, over the judge's logit, its margin over the best other judged
hit, the fused score and the specific words the prompt shares with the card (the keyword half's BM25: IDF over
the tenant's own cards, so a card of generic error words shares only near-zero-weight terms), is sure enough.
Its coefficients are data (`episodic/data/full_card_gate.json`), trained on one set of prompts and read on
another (docs/retrieval.md, "The full card's gate").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from episodic.cards.write import HEURISTIC
from episodic.kernel.models import SearchHit

FEATURES = ("logit", "margin", "score", "keyword")
LOGIT_LIMIT = 12.0  # the judge's probability is read back as a logit; 0 and 1 stay finite


def logit_of(probability: float) -> float:
    p = min(max(probability, 1e-12), 1.0 - 1e-12)
    return max(-LOGIT_LIMIT, min(LOGIT_LIMIT, math.log(p / (1.0 - p))))


def signals(hits: Sequence[SearchHit], i: int) -> dict[str, float]:
    """Hit i's signals among `hits` (the judged ones give the margin; a lone judged hit has margin 0)."""
    hit = hits[i]
    own = logit_of(hit.judge) if hit.judge is not None else -LOGIT_LIMIT
    others = [logit_of(h.judge) for j, h in enumerate(hits) if j != i and h.judge is not None]
    return {
        "logit": own,
        "margin": own - max(others) if others else 0.0,
        "score": hit.score,
        "keyword": math.log1p(max(hit.keyword_score or 0.0, 0.0)),
    }


@dataclass(frozen=True)
class FullCardGate:
    """p = logistic(bias + sum(coefficient x signal)); a full card needs p >= the configured bar."""

    coefficients: Mapping[str, float]
    bias: float

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.bias + sum(weight * values[name] for name, weight in self.coefficients.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def card_kind(hit: SearchHit) -> str:
    """`offline` for the offline distiller's cards (the judge reads their opening words), else `llm`."""
    return "offline" if hit.record.distiller.kind == HEURISTIC else "llm"


def read_gates(text: str) -> dict[str, FullCardGate]:
    """Gates per card kind from a gate file's JSON (the shipped file's format; studies read candidates too)."""
    gates = {}
    for kind, raw in json.loads(text)["kinds"].items():
        unknown = set(raw["coefficients"]) - set(FEATURES)
        if unknown:
            raise ValueError(f"full_card_gate.json names unknown signals: {sorted(unknown)}")
        gates[kind] = FullCardGate(coefficients=dict(raw["coefficients"]), bias=float(raw["bias"]))
    return gates


@cache
def shipped_gates() -> dict[str, FullCardGate]:
    """The coefficients shipped with the package, per card kind (a kind without any is not gated)."""
    return read_gates(
        resources.files("episodic").joinpath("data/full_card_gate.json").read_text(encoding="utf-8")
    )


def gate_probability(hits: Sequence[SearchHit], i: int) -> float | None:
    """Hit i's full-card gate probability (None: unjudged, or its card kind has no gate)."""
    gate = shipped_gates().get(card_kind(hits[i]))
    if gate is None or hits[i].judge is None:
        return None
    return gate.probability(signals(hits, i))
