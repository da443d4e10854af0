"""`record_episode`: the agent that lived a session writes its own card (distiller `self`).

The card is validated like any LLM card (schema, no code/paths/stack traces). Its `verified` must be backed
by evidence in the session's own transcript, found on this machine by session id; when the transcript
cannot be found (e.g. a remote server), or the caller is not the tenant whose transcripts are on this machine
(the settings' `tenant`), `verified` becomes `unverified` and the result says so. It replaces
whatever card the session had (a heuristic or LLM card), which later `episodic index` runs keep.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.auth import READ, WRITE, Principal
from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.errors import InvalidArgumentError, InvalidCardError
from episodic.ingest import store_card
from episodic.mcp.registry import Tool, ToolOutput
from episodic.models import Card, CardRecord, DistillerInfo, NotEpisode, Outcome, Trajectory
from episodic.parse.discovery import default_roots
from episodic.scrub import Scrubber

if TYPE_CHECKING:
    from episodic.service import Memory

log = logging.getLogger(__name__)

TOOL_NAME = "record_episode"
SELF = DistillerInfo(kind="self")
# Claude Code session ids are UUIDs; anything else must still be safe as a file-name stem
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
WRITE_ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


@dataclass
class RecordOutcome:
    record: CardRecord
    replaced: str | None  # the distiller id of the card this one replaced
    transcript_found: bool
    notes: list[str] = field(default_factory=list)


def find_trajectory(memory: Memory, session_id: str) -> Trajectory | None:
    """The session's scrubbed trajectory from this machine's Claude Code transcripts, or None."""
    source = memory.source
    try:
        # fast path: <root>/projects/<project>/<session_id>.jsonl; discover only that project folder
        folders = sorted(
            {
                str(hit.parent)
                for root in default_roots(memory.settings)
                for hit in root.glob(f"projects/*/{session_id}.jsonl")
            }
        )
        for session in source.discover(folders) if folders else ():
            if session.session_key != session_id and Path(session.main_path).stem != session_id:
                continue
            loaded = source.load(session)
            if not isinstance(loaded, NotEpisode) and loaded.session_id == session_id:
                return loaded
    except Exception:  # no transcript is a normal answer here: the claim is downgraded, not refused
        log.exception("looking up the transcript of session %s failed", session_id)
    return None


def _transcript_is_tenants(memory: Memory, tenant_id: str, existing: CardRecord | None) -> bool:
    """This machine's transcripts are read for its own tenant (settings.tenant), or for a tenant that
    already indexed this session from a transcript; another tenant's card never borrows their metadata."""
    return tenant_id == memory.settings.tenant or bool(existing is not None and existing.source_sha256)


def record_agent_card(
    memory: Memory, tenant_id: str, session_id: str, payload: dict[str, Any]
) -> RecordOutcome:
    """Validate an agent-written card, check its outcome against the transcript, store it as `self`."""
    session_id = session_id.strip()
    if not _SESSION_ID_RE.match(session_id):
        raise InvalidArgumentError(
            f"session_id {session_id[:80]!r} is not a session id (letters, digits, '.', '_', '-'; a UUID "
            "in Claude Code)"
        )
    # secrets never leave: the agent saw them in its session; the card must not carry them
    scrubbed, redacted = Scrubber.from_settings(memory.settings).scrub_obj_counted(payload)
    card = parse_card_payload(scrubbed)
    existing = memory.store.get(tenant_id, session_id)
    own_transcript = _transcript_is_tenants(memory, tenant_id, existing)
    trajectory = find_trajectory(memory, session_id) if own_transcript else None
    claimed = card.outcome
    card, notes = enforce_card(card, trajectory)
    if trajectory is None:
        where = (
            "transcript was not found where this server runs"
            if own_transcript
            else "transcript was not found for this tenant (transcripts here are read only for the server's own "
            "tenant or a session this tenant indexed)"
        )
        notes = [
            f"the session's {where}, so no evidence could be checked"
            + (
                " and the outcome was downgraded verified -> unverified"
                if claimed is not card.outcome
                else ""
            )
        ]
    if redacted:
        notes.append(
            f"{sum(redacted.values())} secret(s) redacted from the card ({', '.join(sorted(redacted))})"
        )
    record = store_card(
        memory,
        tenant_id,
        card,
        session_id=session_id,
        distiller=SELF,
        trajectory=trajectory,
        source_sha256=None if trajectory else (existing.source_sha256 if existing else ""),
    )
    return RecordOutcome(
        record=record,
        replaced=existing.distiller.id if existing else None,
        transcript_found=trajectory is not None,
        notes=notes,
    )


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
