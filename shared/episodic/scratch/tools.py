"""`recall_similar` over MCP: the tenant's (from the credential) prior similar tool outcomes, packed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from episodic.kernel.auth import Principal
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import Query, ToolArguments, ToolResult
from episodic.scratch.models import K_MAX, K_MIN
from episodic.scratch.pack import pack_recalls

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

NO_RECALL_TEXT = (
    "No sufficiently similar tool outcome in the last {days} days for this query. This is a real answer, "
    "not an error: proceed without it."
)
DEGRADED_TEXT = (
    "Recall did not complete ({reason}): nothing was searched, so this says nothing about earlier "
    "attempts. Retry once, or proceed without it."
)


def degraded_reason(degraded: str, deadline: float) -> str:
    """A degraded recall in words: a timeout names the deadline it missed."""
    return f"timed out after {deadline:g} s" if degraded == "timeout" else degraded


class RecallArguments(ToolArguments):
    query: Query = Field(
        description=(
            "What you are about to do or what failed, in plain words (e.g. 'rename UserContext in the "
            "auth middleware and fix the type errors')."
        ),
    )
    # omitted: the server's `scratch_k` decides (the schema shows the shipped default)
    k: Annotated[int, Field(ge=K_MIN, le=K_MAX)] | None = Field(
        None, json_schema_extra={"default": 3}, description="3-5."
    )
    deadline_seconds: Annotated[float, Field(gt=0, le=30)] | None = Field(
        None,
        description="Give up after this (default: the server's agent deadline; the prompt hook sends its own).",
    )
    approved_only: bool = Field(
        False, description="Only sessions whose card a person approved (the hook under `review_required`)."
    )


class Recall(ToolResult):
    session_id: str
    tool_name: str
    outcome: Literal["ok", "fail"]
    summary: str
    created_at: str
    similarity: float


class RecallResult(ToolResult):
    results: list[Recall]
    task: Literal["repair", "greenfield"]
    message: str | None = None


def scratch_tools(memory: Memory) -> list[Tool]:
    """[recall_similar] when the memory has scratch memory, else nothing."""
    from episodic.scratch.service import scratch_of

    scratch = scratch_of(memory)
    if scratch is None:
        return []
    from episodic.cards.review import serves_session
    from episodic.scratch.recall import recall_similar

    def recall(principal: Principal, args: RecallArguments) -> ToolOutput:
        wait = float(args.deadline_seconds or scratch.settings.scratch_agent_deadline_seconds)
        found = recall_similar(scratch, principal.tenant_id, args.query, args.k, deadline_seconds=wait)
        if found.degraded:  # a timeout or a store failure is never "nothing similar"
            return ToolOutput(
                DEGRADED_TEXT.format(reason=degraded_reason(found.degraded, wait)), is_error=True
            )
        approved_only = args.approved_only or memory.settings.review_required
        hits = [  # a vetoed session's words leave every face (episodic.cards.review)
            h
            for h in found.hits
            if serves_session(memory, principal.tenant_id, h.record.session_id, approved_only=approved_only)
        ]
        days = scratch.settings.scratch_ttl_days
        text = pack_recalls(hits, days)
        if not text:
            message = NO_RECALL_TEXT.format(days=days)
            return ToolOutput(message, {"results": [], "task": found.task, "message": message})
        results = [
            {
                "session_id": h.record.session_id,
                "tool_name": h.record.tool_name,
                "outcome": h.record.outcome.value,
                "summary": h.record.summary,
                "created_at": h.record.created_at.isoformat(),
                "similarity": round(h.similarity, 4),
            }
            for h in hits
        ]
        return ToolOutput(text, {"results": results, "task": found.task})

    return [
        Tool.from_model(
            RecallArguments,
            recall,
            name="recall_similar",
            title="Recall prior similar tool outcomes",
            description=(
                "Before planning a fix, refactor or change, ask whether a similar attempt already failed "
                "(or worked) in a recent session: returns up to k (3-5) one-line tool outcomes of the last "
                "days (a failing typecheck, a rejected patch, tests fixed after failing), fails first for "
                "repair work, each citing its session_id. Hints only: verify against the current tree. "
                "Says explicitly when nothing is similar enough."
            ),
            result=RecallResult,
        )
    ]
