"""The local judge as the second stage (ports.Reranker): a cross-encoder reads the query with each of the
first stage's best `depth` candidates and the order becomes the first stage's score plus a weighted logit.

What it reads is chosen per card kind, on evidence (docs/retrieval.md, "The judge"): an LLM's or an agent's
card as its text (problem, insight, the first dead ends); an offline (heuristic) card by its session's
opening words, or not at all. A kind whose weight is None is not judged: its candidates keep their first-stage
score. The scores stay on the first stage's scale, as the port asks: the pool's first-stage scores, sorted,
are handed out by the new rank, and each hit keeps its own cosine (the judge reorders, it does not invent
evidence); `judge` carries the judged hit's calibrated probability for the confidence tiers.

A model that is missing, altered or fails is logged once and the adapter stays off for the process: search
keeps the first stage's order (never a crash, never a download).
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from episodic.judge.model import CrossEncoder, JudgeCancelled, ModelProblem
from episodic.kernel.models import CardRecord, SearchHit
from episodic.kernel.ports import Reranker

log = logging.getLogger(__name__)

HEURISTIC = "heuristic"  # card_write.HEURISTIC: the offline distiller's cards
CARD_CHARS = 1200  # more than max_tokens word pieces of English: the cut is the tokenizer's
CACHE_PAIRS = 4096  # (query, text) logits kept per process: the evaluation and a repeated prompt ask twice


def card_text(record: CardRecord) -> str:
    """An LLM's or an agent's card as the judge reads it: its problem, insight and first dead ends."""
    card = record.card
    parts = [card.problem, card.insight or "", *list(card.dead_ends or [])[:2]]
    return " ".join(p.strip() for p in parts if p and p.strip())[:CARD_CHARS]


def offline_text(record: CardRecord, reads: str) -> str:
    """An offline card as the judge reads it: its session's opening words, else (or when asked) its card."""
    if reads == "opening" and record.opening:
        return record.opening[:CARD_CHARS]
    return card_text(record)


@dataclass(frozen=True)
class JudgeWeights:
    """How much the judge's logit counts per card kind (None: that kind is not judged) and what an offline
    card is read by (`opening` or `card`); chosen on one fold of the dev set, read on the other."""

    llm: float | None = 0.2
    offline: float | None = None
    offline_reads: str = "opening"


def calibrated(logit: float, scale: float = 1.0, shift: float = 0.0) -> float:
    """The judge's logit as a probability that the card is the prompt's problem (a logistic fit)."""
    return 1.0 / (1.0 + math.exp(-(scale * logit + shift)))


class LocalReranker(Reranker):
    name = "local"

    def __init__(
        self,
        encoder: CrossEncoder,
        *,
        depth: int = 3,
        max_tokens: int = 160,
        weights: JudgeWeights | None = None,
        calibration: tuple[float, float] = (1.0, 0.0),
    ) -> None:
        self.encoder = encoder
        self.depth = depth
        self.max_tokens = max_tokens
        self.weights = weights or JudgeWeights()
        self.calibration = calibration
        self.disabled: str | None = None  # why the adapter stopped judging (a missing or altered model)
        self._cache: OrderedDict[tuple[str, str, int], float] = OrderedDict()
        self._cache_lock = threading.Lock()

    def weight(self, record: CardRecord) -> float | None:
        return self.weights.offline if record.distiller.kind == HEURISTIC else self.weights.llm

    def text(self, record: CardRecord) -> str:
        if record.distiller.kind == HEURISTIC:
            return offline_text(record, self.weights.offline_reads)
        return card_text(record)

    def logits(self, query: str, texts: Sequence[str]) -> list[float]:
        """The judge's logit per text, from the process's cache where this pair was read before."""
        keys = [(query, text, self.max_tokens) for text in texts]
        with self._cache_lock:
            known = {key: self._cache[key] for key in keys if key in self._cache}
        missing = list(dict.fromkeys(key for key in keys if key not in known))
        if missing:
            fresh = self.encoder.scores(query, [key[1] for key in missing], self.max_tokens)
            with self._cache_lock:
                for key, value in zip(missing, fresh.tolist(), strict=True):
                    known[key] = self._cache[key] = float(value)
                while len(self._cache) > CACHE_PAIRS:
                    self._cache.popitem(last=False)
        return [known[key] for key in keys]

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        if self.disabled is not None:
            return list(hits)
        pool = list(hits[: self.depth])
        judged = [
            i for i, hit in enumerate(pool) if self.weight(hit.record) is not None and self.text(hit.record)
        ]
        if len(pool) < 2 or not judged:
            return list(hits)
        try:
            logits = self.logits(query, [self.text(pool[i].record) for i in judged])
        except JudgeCancelled:  # its search already answered with the first stage's order
            return list(hits)
        except ModelProblem as exc:
            self.disabled = str(exc)
            log.error(
                "the local judge is off for this process (%s); searches keep the first stage's order", exc
            )
            return list(hits)
        by_index = dict(zip(judged, logits, strict=True))
        centre = sorted(logits)[len(logits) // 2]  # an unjudged kind sits at the judged pool's median
        blended = []
        for i, hit in enumerate(pool):
            weight = self.weight(hit.record)
            lift = (weight or 0.0) * (by_index[i] - centre) if i in by_index else 0.0
            blended.append((hit.score + lift, -i))
        order = sorted(range(len(pool)), key=lambda i: blended[i], reverse=True)
        slots = sorted((hit.score for hit in pool), reverse=True)
        scale, shift = self.calibration
        reordered = []
        for slot, i in zip(slots, order, strict=True):
            judge = calibrated(by_index[i], scale, shift) if i in by_index else None
            reordered.append(pool[i].model_copy(update={"score": slot, "judge": judge}))
        return reordered + list(hits[len(pool) :])

    def cancel(self) -> None:
        self.encoder.cancel()

    def warm(self) -> None:
        """Load the model before the first search (its 0.6 s deadline would otherwise pay for the load)."""
        if self.disabled is not None:
            return
        try:
            self.encoder.load()
        except ModelProblem as exc:
            self.disabled = str(exc)
            log.error(
                "the local judge is off for this process (%s); searches keep the first stage's order", exc
            )
