"""The question `quickstart` draws from the user's own cards: a stated task before an unstated one, a
verified card before another, the newest first; and which session it came from."""

from __future__ import annotations

from datetime import UTC, datetime

from episodic.cli.quickstart_question import answered_question, drawn_from, own_question, own_questions
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome


def _record(session_id: str, problem: str, outcome: Outcome, day: int) -> CardRecord:
    return CardRecord(
        card=Card(problem=problem, outcome=outcome),
        session_id=session_id,
        tenant_id="local",
        project="webshop",
        started_at=datetime(2026, 2, day, 9, tzinfo=UTC),
        source_sha256="0" * 64,
        distiller=DistillerInfo(kind="heuristic"),
    )


def test_a_stated_verified_task_is_asked_before_a_newer_unstated_or_unverified_one() -> None:
    records = [
        _record(
            "aaaaaaaa-old", "Biome lint fails on CI but passes locally. Asked: why?", Outcome.VERIFIED, 1
        ),
        _record("bbbbbbbb-new", "Unstated task in the webshop project", Outcome.VERIFIED, 9),
        _record("cccccccc-mid", "What does useMemo cache?", Outcome.INFORMATIONAL, 5),
    ]
    question, record = own_question(records) or ("", None)
    assert question == "Biome lint fails on CI but passes locally."
    assert record is not None and drawn_from(record) == "your session aaaaaaaa, project webshop, 2026-02-01"


def test_an_empty_index_has_no_question() -> None:
    assert own_question([]) is None


def test_with_no_candidate_found_as_a_close_match_the_first_is_asked() -> None:
    records = [
        _record("aaaaaaaa-new", "Look at this branch.", Outcome.VERIFIED, 9),
        _record("bbbbbbbb-old", "Biome lint fails on CI.", Outcome.VERIFIED, 1),
    ]
    searched: list[str] = []

    def nothing_close(question: str) -> list:
        searched.append(question)
        return []

    question, record, hits = answered_question(own_questions(records), nothing_close)
    assert (question, record.session_id, hits) == ("Look at this branch.", "aaaaaaaa-new", [])
    assert searched == ["Look at this branch.", "Biome lint fails on CI."]  # each candidate, in order
