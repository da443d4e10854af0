"""How sure a hit is: the decision rule between a full card, a one-line pointer and silence.

The fused score (store.hybrid) is the blended cosine standardised over the tenant's own cards plus the
keyword half: it says how far a session stands above the rest of *this* index for the query. Inside one
codebase every card clears a fixed cosine floor (the dev set's negatives have a median top similarity of
0.45, as high as found positives), so the tiers are set on the fused score instead (README "Injection"):

- strong: score >= strong_score; a full card may be shown, described as a close match;
- weak: score >= weak_score; at most a pointer (date, problem, session id), marked as weak;
- below: dropped: no confident or weak match is the real answer.

A z-score over a handful of cards cannot reach the bar (the largest z of n values is (n-1)/sqrt(n)), and
over so few it measures nothing: below MIN_POOL cards the tiers fall back to the cosine similarity
(strong at SMALL_INDEX_STRONG_FACTOR times the embedder's floor: 0.5 for MiniLM, whose floor is 0.25).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from episodic.models import Confidence, SearchHit

MIN_POOL = 20  # the pool a z-score needs before it says anything (max z of 20 values is 4.25)
SMALL_INDEX_STRONG_FACTOR = 2.0  # in the embedder's own scale: MiniLM 0.25 -> 0.5, hashing 0.1 -> 0.2


@dataclass(frozen=True)
class ConfidenceRule:
    strong_score: float
    weak_score: float
    min_similarity: float  # the embedder's floor (a hit below it never reaches this rule)

    def tier(self, hit: SearchHit) -> Confidence | None:
        if 0 < hit.pool_size < MIN_POOL:
            if hit.similarity >= self.min_similarity * SMALL_INDEX_STRONG_FACTOR:
                return Confidence.STRONG
            return Confidence.WEAK if hit.similarity >= self.min_similarity else None
        if hit.score >= self.strong_score:
            return Confidence.STRONG
        return Confidence.WEAK if hit.score >= self.weak_score else None

    def label(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The hits, best first, each with its confidence (None: below the weak bar)."""
        return [hit.model_copy(update={"confidence": self.tier(hit)}) for hit in hits]


def shown(hits: Sequence[SearchHit], include_weak: bool) -> list[SearchHit]:
    """What an agent is given: the strong hits, and the weak ones only when asked; never those below."""
    wanted = {Confidence.STRONG, Confidence.WEAK} if include_weak else {Confidence.STRONG}
    return [hit for hit in hits if hit.confidence in wanted]
