"""`recall_failure` over MCP: for a failing command and its error output, the fix of an earlier session of
the caller's tenant (from the credential) that met the same error and got past it, or nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from episodic.kernel.auth import Principal
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import ToolArguments, ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

NO_MATCH_TEXT = "No earlier session met this error and got past it ({reason}). Proceed without it."


class FailureArguments(ToolArguments):
    command: Annotated[str, Field(max_length=4000)] = Field(description="The shell command that failed.")
    error: Annotated[str, Field(min_length=1, max_length=20_000)] = Field(
        description="Its error output (the tool result), as returned."
    )
    session_id: Annotated[str, Field(max_length=200)] = Field(
        "", description="The current session's id: its own records are never the answer."
    )
    approved_only: bool = Field(
        False, description="Only sessions whose card a person approved (the hook under `review_required`)."
    )
    agent: Annotated[str, Field(max_length=40)] | None = Field(
        None, description="The coding agent of the current session (recorded with what it is given)."
    )


class Fix(ToolResult):
    session_id: str
    date: str
    signature: str
    check: str
    passed_command: str
    edits: list[str]
    diagnosis: str
    project: str | None = None
    has_card: bool | None = None


class FailureResult(ToolResult):
    match: Fix | None
    signature: str
    reason: str
    sessions: int


def has_card(memory: Memory, tenant_id: str, session_id: str) -> bool:
    """Whether get_episode answers for the session the entry points to (none yet, or vetoed: it says so)."""
    from episodic.core.search import get_episode
    from episodic.kernel.errors import NotFoundError

    try:
        get_episode(memory, tenant_id, session_id)
    except NotFoundError:
        return False
    return True


def given_already(memory: Memory, tenant_id: str, args: FailureArguments, card_id: str) -> bool:
    """True when this fix was given to the session before (never twice); else it is recorded as given."""
    from episodic.core.injected import Receiver, injection_store, record

    store = injection_store(memory)
    if store is None:
        return False
    if memory.settings.injections_never_twice and "fix" in store.given(tenant_id, args.session_id).get(
        card_id, set()
    ):
        return True
    asked = f"{args.command}\n{args.error}"
    receiver = Receiver(tenant_id, args.session_id, args.agent or "", "failure_hook", asked)
    record(store, receiver, [(card_id, "fix", 0)])
    return False


def failure_tools(memory: Memory) -> list[Tool]:
    """[recall_failure] when the memory has failure memory, else nothing."""
    from episodic.failures.service import failures_of, lookup, render_fix

    failures = failures_of(memory)
    if failures is None:
        return []

    from episodic.cards.review import serves_session

    def recall(principal: Principal, args: FailureArguments) -> ToolOutput:
        tenant = principal.tenant_id
        approved_only = args.approved_only or memory.settings.review_required

        def admits(
            session_id: str,
        ) -> bool:  # a vetoed session's words leave every face (episodic.cards.review)
            return serves_session(memory, tenant, session_id, approved_only=approved_only)

        found = lookup(failures, tenant, args.command, args.error, session_id=args.session_id, admits=admits)
        if (
            found.fix is not None
            and args.session_id
            and given_already(memory, tenant, args, found.fix.session_id)
        ):
            found = found.model_copy(update={"fix": None, "reason": "given to this session already"})
        structured: dict[str, Any] = {
            "match": None,
            "signature": found.signature,
            "reason": found.reason,
            "sessions": found.sessions,
        }
        if found.fix is None:
            return ToolOutput(NO_MATCH_TEXT.format(reason=found.reason), structured)
        fix = found.fix
        structured["match"] = {
            "session_id": fix.session_id,
            "date": fix.passed_at.date().isoformat(),
            "signature": fix.signature,
            "check": fix.check,
            "passed_command": fix.passed_command,
            "edits": fix.edits,
            "diagnosis": fix.diagnosis,
            "project": fix.project,
        }
        structured["match"]["has_card"] = has_card(memory, principal.tenant_id, fix.session_id)
        return ToolOutput(render_fix(fix, has_card=structured["match"]["has_card"]), structured)

    return [
        Tool.from_model(
            FailureArguments,
            recall,
            name="recall_failure",
            title="Recall how an earlier session got past this error",
            description=(
                "When a command fails, pass the command and its error output: if an earlier session met the "
                "same error (paths, line numbers, hashes, times ignored) and a later run of the same check "
                "passed, returns what it turned out to be, what ended it, the check and the session id "
                "(get_episode gives its card). Says explicitly when no earlier session got past it."
            ),
            result=FailureResult,
        )
    ]
