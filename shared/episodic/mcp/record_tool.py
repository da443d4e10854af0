"""The MCP tool `record_episode`: a thin face over the core's `record.record_agent_card` (parse the
arguments, check the write scope, call the core, shape the answer; a rejected card is a tool error)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from episodic.cards.agent import record_agent_card
from episodic.kernel.auth import READ, WRITE, Principal
from episodic.kernel.errors import InvalidCardError
from episodic.kernel.models import Card
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

TOOL_NAME = "record_episode"
WRITE_ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


# ---------------------------------------------------------------- the MCP tool


class RecordArguments(Card):  # the card's fields (omitted ones take its defaults) and its session
    session_id: str = Field(
        min_length=1,
        max_length=128,
        description="The id of the session this card describes (the /remember command supplies it).",
    )


class RecordResult(ToolResult):
    session_id: str
    outcome: str = Field(description="The stored outcome (after the evidence check).")
    distiller: str
    replaced: str | None = Field(description="The distiller of the card it replaced.")
    transcript_found: bool
    notes: list[str]


DESCRIPTION = (
    "Record the memory card of THIS session, written by you, the agent who lived it, so a future agent "
    "meeting a similar problem finds it with search_traces. Call it once, near the end, when asked to "
    "remember the session (the /remember command gives your session_id). Fields: problem = the SYMPTOM "
    "as the user met it, in the words someone would search with; steps = the method, one short line each; "
    "key_decisions with their reasons; insight = the root cause or lesson; dead_ends = what failed and "
    "why; misleading_intuitions = what looked guilty but was not; critical_checks = the checks that "
    "changed the course; tags in lower case. Write in words: no code, no file paths, no stack traces, no "
    "verbatim commands (such a card is rejected). outcome on evidence only: verified only if a check "
    "passed after the last change or the user confirmed it works; the server checks the transcript and "
    "downgrades an unsupported verified. Needs a token with the write scope. Replaces the session's "
    "earlier card."
)


def record_tool(memory: Memory) -> Tool:
    """The write tool. Listed to every token (its refusal is a tool error an agent can explain)."""

    def handler(principal: Principal, args: RecordArguments) -> ToolOutput:
        if not principal.allows(WRITE):
            return ToolOutput(
                "record_episode needs a token with the write scope; this token is read-only, so nothing "
                "was recorded. Tell the user: create one with `episodic token add --tenant NAME --scope "
                "write` and use it for this MCP server (local stdio servers can always write).",
                is_error=True,
            )
        try:
            card = args.model_dump(mode="json", exclude={"session_id"})
            outcome = record_agent_card(memory, principal.tenant_id, args.session_id, card)
        except InvalidCardError as exc:
            return ToolOutput(
                f"The card was rejected and nothing was recorded: {exc}. Rewrite those fields in plain "
                "words (the method, not the code; no file paths, commands or stack traces) and call "
                "record_episode again.",
                is_error=True,
            )
        record = outcome.record
        lines = [
            f"Recorded the card of session {record.session_id} (outcome {record.card.outcome.value}, "
            f"distiller self" + (f", replacing a {outcome.replaced} card" if outcome.replaced else "") + ")."
        ]
        lines += [f"Note: {note}." for note in outcome.notes]
        structured = {
            "session_id": record.session_id,
            "outcome": record.card.outcome.value,
            "distiller": record.distiller.id,
            "replaced": outcome.replaced,
            "transcript_found": outcome.transcript_found,
            "notes": outcome.notes,
        }
        return ToolOutput("\n".join(lines), structured)

    return Tool.from_model(
        RecordArguments,
        handler,
        name=TOOL_NAME,
        title="Record this session's card",
        description=DESCRIPTION,
        result=RecordResult,
        annotations=dict(WRITE_ANNOTATIONS),
        required_scope=READ,  # checked in the handler, so a read-only token gets an isError result
    )
