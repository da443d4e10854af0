"""The evaluation reports what its second stage cost: each prompt's first judging, timed (issue 49)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from episodic.evaluation.second_stage import TimedReranker, second_stage_line
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome, SearchHit
from episodic.kernel.ports import Reranker


class Judge(Reranker):
    name = "local"
    depth = 3

    def __init__(self, judges: bool) -> None:
        self.judges = judges
        self.calls = 0
        self.warmed = self.cancelled = False

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        self.calls += 1
        return [h.model_copy(update={"judge": 0.9 if self.judges else None}) for h in reversed(hits)]

    def warm(self) -> None:
        self.warmed = True

    def cancel(self) -> None:
        self.cancelled = True


def _hits() -> list[SearchHit]:
    card = Card(problem="pytest cannot find a fixture", outcome=Outcome.VERIFIED)
    return [
        SearchHit(
            record=CardRecord(
                card=card,
                tenant_id="local",
                session_id=f"s{i}",
                source_sha256="0" * 64,
                started_at=datetime(2026, 1, 1, tzinfo=UTC),
                distiller=DistillerInfo(kind="claude-code"),
            ),
            score=3.0 - i,
            similarity=0.5,
        )
        for i in range(3)
    ]


def test_each_prompts_first_call_is_timed_and_the_order_is_the_inner_stages() -> None:
    inner = Judge(judges=True)
    timed = TimedReranker(inner)
    hits = _hits()
    first = timed.rerank("q1", hits)
    timed.rerank("q1", hits)  # asked again (the hook's and the MCP view): the judge's cache answers it
    timed.rerank("q2", hits)
    assert [h.record.session_id for h in first] == ["s2", "s1", "s0"] and inner.calls == 3
    summary = timed.summary()
    assert (summary["name"], summary["depth"], summary["queries"], summary["judged"]) == ("local", 3, 2, 2)
    assert summary["p95_ms"] >= summary["p50_ms"] >= 0
    line = second_stage_line("cards", summary)
    assert "judged 2 of 2 prompts" in line and "p95" in line
    timed.warm()
    timed.cancel()
    assert inner.warmed and inner.cancelled


def test_a_card_set_it_does_not_judge_says_so() -> None:
    timed = TimedReranker(Judge(judges=False))
    timed.rerank("q", _hits())
    assert timed.summary()["judged"] == 0
    assert "judged none of 1 prompts" in second_stage_line("heuristic", timed.summary())
