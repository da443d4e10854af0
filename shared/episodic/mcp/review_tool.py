"""The MCP tool `review_episode` (write scope): approve, edit, veto or restore a card by session id, so a
team can review the deployed service remotely. A thin face over `episodic.cards.review.review_episode`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from episodic.cards.review import ReviewAction, review_episode
from episodic.kernel.auth import READ, WRITE, Principal
from episodic.kernel.errors import InvalidCardError
from episodic.kernel.models import Card, CardRecord
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import ToolArguments, ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

TOOL_NAME = "review_episode"
REVIEW_ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,  # a veto hides a card; restore brings it back
    "idempotentHint": False,
    "openWorldHint": False,
}


class ReviewArguments(ToolArguments):
    session_id: str = Field(min_length=1, max_length=128)
    action: ReviewAction
    reason: str | None = Field(None, max_length=500, description="Why (required for veto).")
    # the schema asks for every field (Card.json_schema), as the core's edit does
    card: Annotated[Card, WithJsonSchema(Card.json_schema())] | None = Field(
        None, description="The whole edited card (edit only)."
    )
    reviewer: str | None = Field(None, max_length=80)


class ReviewResult(ToolResult):
    session_id: str
    action: str
    review: Literal["unreviewed", "approved", "vetoed"]
    edited: bool
    outcome: str
    notes: list[str]


DESCRIPTION = (
    "Review one past session's card as a person would: approve it, edit it (give the whole card; it is "
    "validated like any distilled card: no code, file paths or stack traces, and an unsupported 'verified' is "
    "downgraded), veto it with a reason (a vetoed card is never returned by search_traces, get_episode or "
    "the prompt hook), or restore a vetoed card. Needs a token with the write scope."
)


def review_json(record: CardRecord, action: str, notes: list[str]) -> dict[str, Any]:
    review = record.review
    return {
        "session_id": record.session_id,
        "action": action,
        "review": record.review_state.value,
        "edited": bool(review and review.edited),
        "outcome": record.card.outcome.value,
        "notes": notes,
    }


def review_tool(memory: Memory) -> Tool:
    def handler(principal: Principal, args: ReviewArguments) -> ToolOutput:
        if not principal.allows(WRITE):
            return ToolOutput(
                "review_episode needs a token with the write scope; this token is read-only, so nothing "
                "was changed.",
                is_error=True,
            )
        try:
            done = review_episode(
                memory,
                principal.tenant_id,
                args.session_id,
                args.action,
                reason=args.reason or "",
                card=args.card.model_dump(mode="json") if args.card else None,
                reviewer=args.reviewer or "",
            )
        except InvalidCardError as exc:
            return ToolOutput(f"The edit was refused and nothing was changed: {exc}.", is_error=True)
        structured = review_json(done.record, done.action, done.notes)
        text = f"Session {done.record.session_id}: {done.action} done; review state {structured['review']}."
        return ToolOutput(" ".join([text, *(f"Note: {n}." for n in done.notes)]), structured)

    return Tool.from_model(
        ReviewArguments,
        handler,
        name=TOOL_NAME,
        title="Review a past session's card",
        description=DESCRIPTION,
        result=ReviewResult,
        annotations=dict(REVIEW_ANNOTATIONS),
        required_scope=READ,  # checked in the handler, so a read-only token gets an isError result
    )
