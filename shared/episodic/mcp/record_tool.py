"""The MCP tool `record_episode`: a thin face over the core's `record.record_agent_card` (parse the
arguments, check the write scope, call the core, shape the answer; a rejected card is a tool error)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.agent_card import record_agent_card
from episodic.auth import READ, WRITE, Principal
from episodic.errors import InvalidCardError
from episodic.mcp.registry import Tool, ToolOutput
from episodic.models import Card, Outcome

if TYPE_CHECKING:
    from episodic.memory import Memory

TOOL_NAME = "record_episode"
WRITE_ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


# ---------------------------------------------------------------- the MCP tool


def _input_schema() -> dict[str, Any]:
    card = Card.json_schema()
    properties = dict(card["properties"])
    properties["session_id"] = {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "description": "The id of the session this card describes (the /remember command supplies it).",
    }
    return {
        "type": "object",
        "properties": properties,
        "required": ["session_id", "problem", "outcome"],
        "additionalProperties": False,
    }


RECORD_INPUT_SCHEMA = _input_schema()
RECORD_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string"},
        "outcome": {"type": "string", "description": "The stored outcome (after the evidence check)."},
        "distiller": {"type": "string"},
        "replaced": {"type": ["string", "null"], "description": "The distiller of the card it replaced."},
        "transcript_found": {"type": "boolean"},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["session_id", "outcome", "distiller", "replaced", "transcript_found", "notes"],
    "additionalProperties": False,
}
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


def _card_fields(args: dict[str, Any]) -> dict[str, Any]:
    """The card's fields; those the input schema lets the agent omit take the model's defaults."""
    defaults = Card(problem="-", outcome=Outcome.INFORMATIONAL).model_dump(mode="json")
    fields = {name: value for name, value in args.items() if name in Card.model_fields}
    return {**{n: v for n, v in defaults.items() if n not in ("problem", "outcome")}, **fields}


def record_tool(memory: Memory) -> Tool:
    """The write tool. Listed to every token (its refusal is a tool error an agent can explain)."""

    def handler(principal: Principal, args: dict[str, Any]) -> ToolOutput:
        if not principal.allows(WRITE):
            return ToolOutput(
                "record_episode needs a token with the write scope; this token is read-only, so nothing "
                "was recorded. Tell the user: create one with `episodic token add --tenant NAME --scope "
                "write` and use it for this MCP server (local stdio servers can always write).",
                is_error=True,
            )
        try:
            outcome = record_agent_card(memory, principal.tenant_id, args["session_id"], _card_fields(args))
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

    return Tool(
        name=TOOL_NAME,
        title="Record this session's card",
        description=DESCRIPTION,
        input_schema=RECORD_INPUT_SCHEMA,
        output_schema=RECORD_OUTPUT_SCHEMA,
        handler=handler,
        annotations=dict(WRITE_ANNOTATIONS),
        required_scope=READ,  # checked in the handler, so a read-only token gets an isError result
    )
