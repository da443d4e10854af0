"""How sure a hit is: the decision rule between a full card, a one-line pointer and silence.

Two measures must agree (chosen on the dev set's fold A, reported on fold B; figures in docs/retrieval.md): the
fused score (store.hybrid: how far a session stands above the rest of *this* index) and the cosine in multiples of
the embedder's floor (a session that stands out of a crowd can still be far in absolute terms).
- strong: score >= strong_score and similarity >= STRONG_FACTOR x floor: a full card, described as close;
- weak: score >= weak_score and similarity >= WEAK_FACTOR x floor: a one-line pointer even unasked (the hook);
- faint: score >= faint_score and similarity >= FAINT_FACTOR x floor: only for an agent that asks, labelled;
- below: dropped. With the local judge, `judge_strong` / `judge_weak` let its probability decide the full card and
rule out pointers (`ConfidenceRule.tier`); a judged full card also needs the full-card gate (`judge_gate`,
core.full_card_gate), and no full card at all unless the words the prompt shares with the card weigh `min_keyword`
in the keyword half. Below MIN_POOL cards a z-score measures nothing, so only the cosine bars apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from episodic.core.full_card_gate import gate_probability
from episodic.kernel.models import Confidence, SearchHit

MIN_POOL = 20  # the pool a z-score needs before it says anything (max z of 20 values is 4.25)
STRONG_FACTOR = 2.2  # MiniLM: floor 0.25 -> a full card needs cosine >= 0.55
WEAK_FACTOR = 1.6  # MiniLM: floor 0.25 -> an unasked pointer needs cosine >= 0.40
FAINT_FACTOR = 1.4  # MiniLM: floor 0.25 -> an entry for an agent that asks needs cosine >= 0.35


@dataclass(frozen=True)
class ConfidenceRule:
    strong_score: float
    weak_score: float
    min_similarity: float  # the embedder's floor (a hit below it never reaches this rule)
    faint_score: float = 2.0
    judge_strong: float | None = (
        None  # the judge's probability for a full card (None: the fused score decides)
    )
    judge_weak: float | None = None  # below this probability a judged hit is at most faint (None: off)
    # a judged full card also needs the full-card gate's probability (core.full_card_gate) >= this (None: off)
    judge_gate: float | None = None
    # a full card needs at least this much specific evidence: the keyword half's BM25 of the words the prompt
    # shares with the card, IDF over the tenant's own cards (unknown where the store ran no keyword search)
    min_keyword: float = 0.0

    @property
    def strong_similarity(self) -> float:
        return self.min_similarity * STRONG_FACTOR

    @property
    def weak_similarity(self) -> float:
        return self.min_similarity * WEAK_FACTOR

    @property
    def faint_similarity(self) -> float:
        return self.min_similarity * FAINT_FACTOR

    def tier(self, hit: SearchHit, gate: float | None = None) -> Confidence | None:
        """The hit's tier; `gate` is its full-card gate probability (None: not computed)."""
        tier = self._tier(hit, gate)
        specific = hit.keyword_score is None or hit.keyword_score >= self.min_keyword
        if tier == Confidence.STRONG and not specific:  # the same topic in common words: a pointer at most
            return Confidence.WEAK
        return tier

    def _tier(self, hit: SearchHit, gate: float | None) -> Confidence | None:
        small = 0 < hit.pool_size < MIN_POOL
        if self.judge_weak is not None and hit.judge is not None and hit.judge < self.judge_weak:
            return self.faint(hit, small)
        judged = hit.judge is not None and self.judge_strong is not None
        gated = self.judge_gate is None or gate is None or gate >= self.judge_gate
        if judged and gated and hit.judge >= self.judge_strong and hit.similarity >= self.weak_similarity:  # type: ignore[operator]
            return Confidence.STRONG
        if (
            not judged
            and hit.similarity >= self.strong_similarity
            and (small or hit.score >= self.strong_score)
        ):
            return Confidence.STRONG
        if hit.similarity >= self.weak_similarity and (small or hit.score >= self.weak_score):
            return Confidence.WEAK
        return self.faint(hit, small)

    def faint(self, hit: SearchHit, small: bool) -> Confidence | None:
        """FAINT when the hit clears the faint tier's bars, else None."""
        if hit.similarity >= self.faint_similarity and (small or hit.score >= self.faint_score):
            return Confidence.FAINT
        return None

    def label(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The hits, best first, each with its confidence (None: below the faint bar); a judged hit's gate
        reads the other judged hits of the list (its margin over the best of them)."""
        labelled = []
        for i, hit in enumerate(hits):
            gate = gate_probability(hits, i) if self.judge_gate is not None else None
            labelled.append(hit.model_copy(update={"confidence": self.tier(hit, gate)}))
        return labelled


# best first: a tier is the verdict on a hit, so a faint hit never comes before a weak one even when its fused
# score is higher (the tiers weigh the cosine too); below the faint bar last
TIER_ORDER: dict[Confidence | None, int] = {
    Confidence.STRONG: 0,
    Confidence.WEAK: 1,
    Confidence.FAINT: 2,
    None: 3,
}


def by_tier(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The hits best first: by tier, then in their ranked order within a tier (a stable sort)."""
    return sorted(hits, key=lambda hit: TIER_ORDER[hit.confidence])


def cards_only_if_verified(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The hits with every episode whose fix was never verified (failed, unverified, informational) at most
    weak: an agent that did not ask for them still sees them, labelled with their outcome, as one-line entries
    it may open, never as a full card whose insight reads like a fix (DESIGN invariant 3; the figures that chose
    this are in docs/retrieval.md)."""
    return [
        hit.model_copy(update={"confidence": Confidence.WEAK})
        if hit.confidence == Confidence.STRONG and hit.record.card.outcome.value != "verified"
        else hit
        for hit in hits
    ]


def shown(hits: Sequence[SearchHit], include_weak: bool) -> list[SearchHit]:
    """What an agent is given, best first: the strong hits, and the weak and faint ones unless it asked for
    strong only; never those below the faint bar."""
    wanted = set(Confidence) if include_weak else {Confidence.STRONG}
    return by_tier([hit for hit in hits if hit.confidence in wanted])
