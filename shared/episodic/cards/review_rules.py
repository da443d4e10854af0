"""The review rules the write path needs (no I/O): what a replacing card inherits, what waits in the queue.

Kept apart from `episodic.cards.review` (which calls the write path) so `ingest` can apply them without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from episodic.kernel.models import CardRecord, Outcome, Review, ReviewEvent, ReviewState

MAX_HISTORY = 50  # review acts kept per card (oldest dropped)


def event_history(review: Review, action: str, reviewer: str, reason: str = "") -> list[ReviewEvent]:
    event = ReviewEvent(action=action, at=datetime.now(UTC), reviewer=reviewer, reason=reason)
    return [*review.history, event][-MAX_HISTORY:]


def carry_review(existing: CardRecord | None, new: CardRecord) -> CardRecord:
    """The review a replacing card inherits (rules in the module docstring)."""
    if existing is None or existing.review is None or new.review is not None:
        return new
    old = existing.review
    if existing.source_sha256 == new.source_sha256 and existing.card == new.card:
        return new.model_copy(update={"review": old})  # the same card written again
    if old.state is ReviewState.VETOED:
        review = old.model_copy(
            update={
                "session_grew": True,
                "original": None,
                "history": event_history(
                    old, "session-grew", "", "a new card was distilled; it stays vetoed"
                ),
            }
        )
    else:
        review = Review(
            superseded=existing.card if old.edited else old.superseded,
            history=event_history(
                old, "session-grew", "", f"the {old.state.value} card was replaced by a new one"
            ),
        )
    return new.model_copy(update={"review": review})


def needs_review(record: CardRecord) -> bool:
    """In the queue: nobody has looked at it, or its session grew since a veto."""
    review = record.review
    return review is None or review.state is ReviewState.UNREVIEWED or review.session_grew


def queue_order(records: Iterable[CardRecord]) -> list[CardRecord]:
    """Verified first (those are the cards the hook injects), newest first within each group."""

    def key(record: CardRecord) -> tuple[bool, float]:
        started = record.started_at or record.indexed_at
        stamp = started.timestamp() if started else 0.0
        return (record.card.outcome is not Outcome.VERIFIED, -stamp)

    return sorted(records, key=key)
