"""Recall@k, MRR and their standard errors; the two-standard-error rule for calling a winner.

- recall@k is a proportion: its standard error is the binomial sqrt(p(1-p)/n).
- MRR is a mean of per-query reciprocal ranks (0 for a miss): its standard error is the sample
  standard deviation over sqrt(n) (0 for fewer than two queries).
- Two systems are compared on the standard error of the difference, sqrt(se_a² + se_b²). It treats
  the two systems as independent, which overstates the error for paired runs on the same queries:
  the rule is conservative, so a "winner" is a real one and a close call is reported as a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

from pydantic import BaseModel


def rank_of(target: str, ranking: Sequence[str]) -> int | None:
    """1-based position of the target in the ranking, None when it is not ranked at all."""
    for position, session_id in enumerate(ranking, start=1):
        if session_id == target:
            return position
    return None


def recall_at(ranks: Sequence[int | None], k: int) -> tuple[float, float]:
    """Share of queries whose target is in the top k, and its binomial standard error."""
    n = len(ranks)
    if n == 0:
        return 0.0, 0.0
    p = sum(1 for r in ranks if r is not None and r <= k) / n
    return p, math.sqrt(p * (1 - p) / n)


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> tuple[float, float]:
    """MRR (a miss counts 0) and the standard error of that mean."""
    n = len(ranks)
    if n == 0:
        return 0.0, 0.0
    values = [1.0 / r if r is not None else 0.0 for r in ranks]
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


class SystemMetrics(BaseModel):
    """One system's scores over one set of queries (k is the cut-off of the second recall)."""

    k: int
    n: int
    recall_at_1: float
    recall_at_k: float
    mrr: float
    se_recall_at_1: float
    se_recall_at_k: float
    se_mrr: float

    def as_json(self) -> dict[str, object]:
        """The documented JSON shape: recall@1, recall@<k>, mrr, n, se{...} (recall@1 first)."""
        at_k = f"recall@{self.k}"
        se: dict[str, float] = {"recall@1": round(self.se_recall_at_1, 4)}
        out: dict[str, object] = {"recall@1": round(self.recall_at_1, 4)}
        out[at_k] = round(self.recall_at_k, 4)
        se[at_k] = round(self.se_recall_at_k, 4)
        out["mrr"] = round(self.mrr, 4)
        se["mrr"] = round(self.se_mrr, 4)
        out["n"] = self.n
        out["se"] = se
        return out


def summarize(ranks: Sequence[int | None], k: int) -> SystemMetrics:
    r1, se1 = recall_at(ranks, 1)
    rk, sek = recall_at(ranks, k)
    mrr, se_mrr = mean_reciprocal_rank(ranks)
    return SystemMetrics(
        k=k,
        n=len(ranks),
        recall_at_1=r1,
        recall_at_k=rk,
        mrr=mrr,
        se_recall_at_1=se1,
        se_recall_at_k=sek,
        se_mrr=se_mrr,
    )


class Comparison(BaseModel):
    """Two systems on recall@k: a winner only when they differ by at least two standard errors."""

    a: str
    b: str
    difference: float  # recall@k of a minus recall@k of b
    se_difference: float
    winner: str | None  # None: a tie

    @property
    def statement(self) -> str:
        detail = f"Δ={self.difference:+.3f}, 2·SE={2 * self.se_difference:.3f}"
        if self.winner is None:
            return f"{self.a} and {self.b} tie ({detail})"
        loser = self.b if self.winner == self.a else self.a
        return f"{self.winner} beats {loser} ({detail})"


def compare(a: str, ma: SystemMetrics, b: str, mb: SystemMetrics) -> Comparison:
    difference = ma.recall_at_k - mb.recall_at_k
    se_difference = math.sqrt(ma.se_recall_at_k**2 + mb.se_recall_at_k**2)
    decided = difference != 0 and abs(difference) >= 2 * se_difference
    winner = (a if difference > 0 else b) if decided else None
    return Comparison(a=a, b=b, difference=difference, se_difference=se_difference, winner=winner)


def compare_all(metrics: dict[str, SystemMetrics]) -> list[Comparison]:
    """Every pair, the better system (on recall@k) first."""
    ordered = sorted(metrics, key=lambda name: -metrics[name].recall_at_k)
    return [compare(a, metrics[a], b, metrics[b]) for a, b in combinations(ordered, 2)]
