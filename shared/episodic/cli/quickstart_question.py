"""What `quickstart` asks when no `--query` is given: a question drawn from the user's own indexed sessions
(its newest verified card's problem), so the search shows what memory gives on their own work, not the demo's."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from episodic.cards.present import first_sentence
from episodic.kernel.models import CardRecord

_UNDATED = datetime.min.replace(tzinfo=UTC)
UNSTATED = "Unstated task"  # the offline distiller's problem for a session that never said its task


def own_question(records: Iterable[CardRecord]) -> tuple[str, CardRecord] | None:
    """(the question, the card it came from): the newest verified card's problem in one sentence, else the
    newest card's, a card whose session stated its task first; None for an empty index."""

    def newest_first(record: CardRecord) -> tuple[bool, bool, datetime]:
        started = record.started_at or _UNDATED
        stated = not record.card.problem.startswith(UNSTATED)
        verified = record.card.outcome.value == "verified"
        return stated, verified, started if started.tzinfo else started.replace(tzinfo=UTC)

    chosen = max(records, key=newest_first, default=None)
    if chosen is None:
        return None
    return first_sentence(chosen.card.problem), chosen


def drawn_from(record: CardRecord) -> str:
    """Which session a question came from, as a person finds it again (`episodic show ID`)."""
    where = [f"your session {record.session_id[:8]}"]
    if record.project:
        where.append(f"project {record.project}")
    if record.started_at:
        where.append(record.started_at.date().isoformat())
    return ", ".join(where)
