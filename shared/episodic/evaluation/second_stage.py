"""The second stage's cost as the evaluation saw it: each query's first judging, timed.

The evaluation waits for the judge (no deadline) and asks most prompts more than once (ranking, the hook's
view, the MCP view); the judge's cache answers the repeats, so only a query's first call is timed. These are
the latencies of this run on this machine, with its load average: `scripts/bench_hook.py --reranker local`
and `scripts/bench_search.py --judge` measure the serving paths.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from episodic.kernel.models import SearchHit
from episodic.kernel.ports import Reranker


class TimedReranker(Reranker):
    """A second stage that records how long each query's first `rerank` took, and whether it judged."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.depth = inner.depth
        self.seconds: list[float] = []
        self.judged = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        started = time.perf_counter()
        out = self.inner.rerank(query, hits)
        elapsed = time.perf_counter() - started
        with self._lock:
            if query not in self._seen:
                self._seen.add(query)
                self.seconds.append(elapsed)
                self.judged += any(hit.judge is not None for hit in out)
        return out

    def cancel(self) -> None:
        self.inner.cancel()

    def warm(self) -> None:
        self.inner.warm()

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.seconds)

        def pct(q: float) -> float:
            return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 1)

        return {
            "name": self.name,
            "depth": self.depth,
            "queries": len(ordered),  # prompts: the queries and the negatives
            "judged": self.judged,
            **({"p50_ms": pct(0.5), "p95_ms": pct(0.95)} if ordered else {}),
            "load_average_1m": round(os.getloadavg()[0], 2),
        }


def second_stage_line(label: str, summary: dict[str, Any]) -> str:
    """One line of the report: what the second stage cost on one card set."""
    name, depth = summary["name"], summary["depth"]
    if not summary.get("judged"):
        return (
            f"- **{label}**: the {name} second stage judged none of {summary.get('queries', 0)} prompts "
            "(no candidate of a card kind it judges)"
        )
    return (
        f"- **{label}**: the {name} second stage (best {depth}) judged {summary['judged']} of "
        f"{summary['queries']} prompts; each prompt's first call p50 {summary['p50_ms']} ms, p95 "
        f"{summary['p95_ms']} ms (load average {summary['load_average_1m']})"
    )
