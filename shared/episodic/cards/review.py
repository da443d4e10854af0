"""Human review of cards: approve, edit, veto (with a reason), restore; the review queue; re-index rules.

The review is part of the stored record (`CardRecord.review`), so both stores and `cards export/import`
keep it. A vetoed card stays stored (so `index` of the unchanged session does not re-create it) but
leaves every query pool (search, the hook, MCP); `get_episode` refuses it. An edit is validated exactly
like an LLM card (schema, no code/paths/stack traces; evidence may only downgrade `verified`) and keeps
the distilled card beside it as `original`.

Re-index (`carry_review`, called when a session's card is replaced): an unchanged session is never
re-distilled, so its review stays as it is. A grown session gets a fresh card: a veto carries over (the
new card stays hidden, marked `session_grew`, and waits in the queue), because silently re-surfacing a card
someone vetoed is the poisoning risk; an approval or an edit does not (it was made on other content), so the
new card is unreviewed, and a human-edited card it replaces is kept as `superseded`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from episodic.cards.review_rules import MAX_HISTORY, event_history, needs_review, queue_order
from episodic.distill.checks import card_violations, enforce_card, parse_card_payload
from episodic.kernel.errors import ConfigError, InvalidArgumentError, InvalidCardError, NotFoundError
from episodic.kernel.models import Card, CardRecord, Outcome, Review, ReviewState, check_tenant
from episodic.kernel.ports import ReviewableStore
from episodic.scrub import Scrubber

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

Action = Literal["approve", "edit", "veto", "restore"]
ReviewAction = Literal["approve", "edit", "veto", "restore"]
ACTIONS: tuple[str, ...] = get_args(ReviewAction)
MAX_REASON_CHARS = 500


@dataclass
class ReviewOutcome:
    record: CardRecord
    action: str
    notes: list[str] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


_event = event_history


def _reviewable(memory: Memory) -> ReviewableStore:
    store = memory.store
    if not isinstance(store, ReviewableStore):
        raise ConfigError(f"the {type(store).__name__} store keeps no review state")
    return store


def _stored(memory: Memory, tenant_id: str, session_id: str) -> CardRecord:
    from episodic.sessions.ids import card_session_id

    record = memory.store.get(tenant_id, card_session_id(memory, tenant_id, session_id))
    if record is None:
        raise NotFoundError(f"no episode with session id {session_id!r}")
    return record


def validate_edit(memory: Memory, record: CardRecord, payload: dict[str, Any]) -> tuple[Card, list[str]]:
    """A reviewer's card, checked like an LLM card: scrubbed, schema, card rules; a `verified` the stored
    card did not already have must be backed by the session's transcript (else it is downgraded)."""
    from episodic.cards.agent import owned_trajectory

    scrubbed, redacted = Scrubber.from_settings(memory.settings).scrub_obj_counted(payload)
    card = parse_card_payload(scrubbed)
    violations = card_violations(card)
    if violations:
        raise InvalidCardError(
            "card breaks the card rules (no code, paths or stack traces): " + "; ".join(violations)
        )
    notes: list[str] = []
    if card.outcome is Outcome.VERIFIED and record.card.outcome is not Outcome.VERIFIED:
        # the transcript only when this tenant owns it: never another tenant's, even under its own card
        _, trajectory = owned_trajectory(memory, record.tenant_id, record.session_id, record)
        card, notes = enforce_card(card, trajectory)
    if redacted:
        notes.append(f"{sum(redacted.values())} secret(s) redacted from the card")
    return card, notes


def review_episode(
    memory: Memory,
    tenant_id: str,
    session_id: str,
    action: str,
    *,
    reason: str = "",
    card: dict[str, Any] | None = None,
    reviewer: str = "",
) -> ReviewOutcome:
    """Apply one review act to the session's card and store it; typed errors for bad input (nothing lost)."""
    if action not in ACTIONS:
        raise InvalidArgumentError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    scrubber = Scrubber.from_settings(memory.settings)  # written text is stored and shown: scrubbed too
    reason = scrubber.scrub_field(reason, MAX_REASON_CHARS)
    reviewer = scrubber.scrub_field(reviewer, 80)
    store = _reviewable(memory)
    record = _stored(memory, tenant_id, session_id)
    review = record.review or Review()
    notes: list[str] = []
    base = {"reviewer": reviewer, "reviewed_at": _now(), "reviewed_sha256": record.source_sha256}
    if action == "veto":
        if not reason:
            raise InvalidArgumentError("a veto needs a reason (what is wrong with this card)")
        review = review.model_copy(
            update={**base, "state": ReviewState.VETOED, "reason": reason, "session_grew": False}
        )
    elif action == "approve":
        if review.state is ReviewState.VETOED:
            raise InvalidArgumentError("this card is vetoed: restore it before approving it")
        review = review.model_copy(update={**base, "state": ReviewState.APPROVED, "session_grew": False})
    elif action == "restore":
        if review.state is not ReviewState.VETOED:
            raise InvalidArgumentError(
                f"only a vetoed card can be restored; this one is {review.state.value}"
            )
        review = review.model_copy(
            update={**base, "state": ReviewState.UNREVIEWED, "reason": "", "session_grew": False}
        )
    if action != "edit":
        review = review.model_copy(update={"history": _event(review, action, reviewer, reason)})
        updated = record.model_copy(update={"review": review})
        store.rewrite_record(updated)
        return ReviewOutcome(updated, action, notes)
    if card is None:
        raise InvalidArgumentError("an edit needs the whole card (every field)")
    edited, notes = validate_edit(memory, record, card)
    review = review.model_copy(
        update={
            **base,
            "original": review.original or record.card,  # the distilled card, kept beside every edit
            "history": _event(review, "edit", reviewer, "; ".join(notes)),
        }
    )
    updated = record.model_copy(update={"card": edited, "review": review})
    from episodic.cards.write import embed_card

    # new text: re-embedded (an offline card's opening words are the session's, and stay)
    memory.store.upsert(updated, embed_card(memory, edited, record.opening), memory.manifest)
    return ReviewOutcome(updated, action, notes)


def serves_session(memory: Memory, tenant_id: str, session_id: str, *, approved_only: bool) -> bool:
    """Whether a session's words may reach an agent through any face (the failure memory, scratch recall):
    never a vetoed card's; under `review_required` (`approved_only`) only an approved card's."""
    record = memory.store.get(tenant_id, session_id)
    state = record.review_state if record is not None else None
    if approved_only:
        return state is ReviewState.APPROVED
    return state is not ReviewState.VETOED


def review_queue(memory: Memory, tenant_id: str, limit: int = 200) -> list[CardRecord]:
    """What nobody has looked at yet, newest verified first."""
    check_tenant(tenant_id)
    return queue_order(r for r in memory.store.iter_records(tenant_id) if needs_review(r))[:limit]


def import_review(
    memory: Memory, record: CardRecord, raw: dict[str, Any], invalid: list[tuple[str, str]], path: object
) -> bool:
    """Restore an exported review on an imported card (`cards import`); a malformed one is reported."""
    from pydantic import ValidationError

    try:  # an exported review's reasons were written by people: scrubbed like the card
        review = Review.model_validate(Scrubber.from_settings(memory.settings).scrub_obj(raw))
    except ValidationError as exc:
        invalid.append((str(path), f"review ignored: {exc.errors()[0]['msg']}"))
        return False
    _reviewable(memory).rewrite_record(record.model_copy(update={"review": review}))
    return True


__all__ = [
    "ACTIONS",
    "MAX_HISTORY",
    "ReviewOutcome",
    "import_review",
    "needs_review",
    "queue_order",
    "review_episode",
    "review_queue",
    "serves_session",
]
