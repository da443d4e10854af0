"""What `quickstart` asks when no `--query` is given: a question drawn from the user's own indexed sessions
(the newest verified card's problem that finds its own session as a close match), so the search shows what memory gives on their own work, not the demo's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from episodic.cards.present import first_sentence
from episodic.kernel.models import CardRecord, Confidence, SearchHit

_UNDATED = datetime.min.replace(tzinfo=UTC)
UNSTATED = "Unstated task"  # the offline distiller's problem for a session that never said its task


QUESTION_CANDIDATES = (
    5  # searched in turn, at most: a quickstart runs a handful of searches, not one per card
)


def _preference(record: CardRecord) -> tuple[bool, bool, datetime]:
    started = record.started_at or _UNDATED
    stated = not record.card.problem.startswith(UNSTATED)
    verified = record.card.outcome.value == "verified"
    return stated, verified, started if started.tzinfo else started.replace(tzinfo=UTC)


def own_questions(
    records: Iterable[CardRecord], limit: int = QUESTION_CANDIDATES
) -> list[tuple[str, CardRecord]]:
    """(the question, the card it came from), best first: a card whose session stated its task, a verified
    card, the newest; each question its card's problem in one sentence; [] for an empty index."""
    ranked = sorted(records, key=_preference, reverse=True)[:limit]
    return [(first_sentence(record.card.problem), record) for record in ranked]


def own_question(records: Iterable[CardRecord]) -> tuple[str, CardRecord] | None:
    """The first of `own_questions`, None for an empty index."""
    return next(iter(own_questions(records, 1)), None)


def answered_question(
    candidates: list[tuple[str, CardRecord]], search: Callable[[str], list[SearchHit]]
) -> tuple[str, CardRecord, list[SearchHit]]:
    """The first candidate whose search gives its own session first as a close match, with that search's
    hits; else the first candidate's: a session opened by a general request ("look at this branch") is
    matched only faintly by its own words, which shows a newcomer nothing of what memory gives."""
    first: tuple[str, CardRecord, list[SearchHit]] | None = None
    for question, record in candidates:
        hits = search(question)
        if (
            hits
            and hits[0].record.session_id == record.session_id
            and hits[0].confidence == Confidence.STRONG
        ):
            return question, record, hits
        first = first or (question, record, hits)
    if first is None:
        raise ValueError("answered_question needs at least one candidate")
    return first


def drawn_from(record: CardRecord) -> str:
    """Which session a question came from, as a person finds it again (`episodic show ID`)."""
    where = [f"your session {record.session_id[:8]}"]
    if record.project:
        where.append(f"project {record.project}")
    if record.started_at:
        where.append(record.started_at.date().isoformat())
    return ", ".join(where)
