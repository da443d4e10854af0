"""Agent-card recording: the agent that lived a session writes its own card (distiller `self`).

The card is validated like any LLM card (schema, no code/paths/stack traces) and scrubbed. Its `verified`
must be backed by evidence in the session's own transcript, found on this machine by session id (deployed:
the tenant's upload, `Memory.uploaded`, which also archives the card); when the transcript cannot be found, or the caller is not the tenant whose transcripts are on
this machine (the settings' `tenant`), `verified` becomes `unverified` and the notes say so.
It replaces whatever card the session had (a heuristic or LLM card), which later `episodic index` runs
keep. The MCP tool `record_episode` (`mcp.record_tool`) is a thin face over `record_agent_card`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.cards.write import store_card
from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import DEFAULT_AGENT, CardRecord, DistillerInfo, NotEpisode, Trajectory
from episodic.parse.discovery import default_roots
from episodic.scrub import Scrubber

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

log = logging.getLogger(__name__)

SELF = DistillerInfo(kind="self")
# Claude Code session ids are UUIDs; anything else must still be safe as a file-name stem
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass
class RecordOutcome:
    record: CardRecord
    replaced: str | None  # the distiller id of the card this one replaced
    transcript_found: bool
    notes: list[str] = field(default_factory=list)


def find_trajectory(
    memory: Memory, session_id: str, source_path: str = "", agent: str = DEFAULT_AGENT
) -> Trajectory | None:
    """The session's scrubbed trajectory from this machine, or None: first where it was indexed from (its
    recorded `source_path`: another folder, a Codex or Gemini file), then Claude Code's project folders,
    then, for another agent's session, that agent's default roots."""
    try:
        if source_path and Path(source_path).is_file():
            found = load_session(memory, [str(Path(source_path).parent)], session_id, path=source_path)
            if found is not None:
                return found
        # fast path: <root>/projects/<project>/<session_id>.jsonl; discover only that project folder
        folders = sorted(
            {
                str(hit.parent)
                for root in default_roots(memory.settings)
                for hit in root.glob(f"projects/*/{session_id}.jsonl")
            }
        )
        if folders:
            return load_session(memory, folders, session_id)
        return load_session(memory, None, session_id, agent) if agent != DEFAULT_AGENT else None
    except Exception:  # no transcript is a normal answer here: the claim is downgraded, not refused
        log.exception("looking up the transcript of session %s failed", session_id)
    return None


def _uploaded_trajectory(memory: Memory, tenant_id: str, session_id: str) -> Trajectory | None:
    assert memory.uploaded is not None
    try:
        return memory.uploaded.find(tenant_id, session_id, memory.source)
    except Exception:  # as on a laptop: no transcript downgrades the claim, it does not refuse the card
        log.exception("reading the uploaded transcript of session %s failed", session_id)
        return None


def is_server_tenant(memory: Memory, tenant_id: str) -> bool:
    """The tenant whose transcripts are on this machine (settings.tenant)."""
    return tenant_id == memory.settings.tenant


def owned_trajectory(
    memory: Memory, tenant_id: str, session_id: str, existing: CardRecord | None
) -> tuple[bool, Trajectory | None]:
    """(may this tenant read this machine's transcripts of the session, the trajectory it may read).

    The server's own tenant may; another tenant only for a session it indexed from exactly the transcript
    found here (its stored card's source hash), so it never reads — nor learns the existence or the end
    of — another tenant's session by naming its id."""
    where = (existing.source_path, existing.agent) if existing is not None else ("", DEFAULT_AGENT)
    if is_server_tenant(memory, tenant_id):
        found = find_trajectory(memory, session_id, *where)
        return True, found if found is not None else _kept(memory, tenant_id, session_id)
    indexed = existing.source_sha256 if existing is not None else ""
    if not indexed:
        return False, None
    trajectory = find_trajectory(memory, session_id, *where)
    if trajectory is not None and trajectory.source_sha256 == indexed:
        return True, trajectory
    # deleted by the agent (or not the file it indexed): the copy this tenant kept when it indexed the session
    return True, _kept(memory, tenant_id, session_id)


def _kept(memory: Memory, tenant_id: str, session_id: str) -> Trajectory | None:
    """The tenant's own kept trajectory of the session (episodic.sessions.kept), or None."""
    if memory.kept is None:
        return None
    try:
        kept = memory.kept.get(tenant_id, session_id)
        admitted = memory.source.admit(kept) if kept is not None else None  # today's scope rules apply
        return admitted if isinstance(admitted, Trajectory) else None
    except Exception:  # as for a missing transcript: the claim is downgraded, not refused
        log.exception("reading the kept trajectory of session %s failed", session_id)
        return None


def load_session(
    memory: Memory, folders: list[str] | None, session_id: str, agent: str | None = None, path: str = ""
) -> Trajectory | None:
    """The session `session_id` among those discovered under `folders` (None: the default roots); a
    file named otherwise (a Codex rollout) is found by its `path`."""
    for session in memory.source.discover(folders):
        if agent is not None and session.agent != agent:
            continue
        named = session.session_key == session_id or Path(session.main_path).stem == session_id
        if not named and session.main_path != path:
            continue
        loaded = memory.source.load(session)
        if not isinstance(loaded, NotEpisode) and loaded.session_id == session_id:
            return loaded
    return None


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
    if memory.uploaded is not None:  # deployed: the tenant's own upload (the key prefix is the tenant)
        own_transcript, trajectory = True, _uploaded_trajectory(memory, tenant_id, session_id)
    else:
        own_transcript, trajectory = owned_trajectory(memory, tenant_id, session_id, existing)
    # only for the tenant the scope rules are about: to another, a refusal would reveal the session exists
    excluded = getattr(memory.source, "excluded_sessions", {}).get(session_id) if own_transcript else None
    if excluded:  # the scope rules keep this session out of memory: an agent's own card included
        raise InvalidArgumentError(f"session {session_id} is not remembered: {excluded}")
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
    if memory.uploaded is not None:  # beside the distilled cards, for review and re-indexing
        notes.append(f"card archived at {memory.uploaded.archive(record)}")
    return RecordOutcome(
        record=record,
        replaced=existing.distiller.id if existing else None,
        transcript_found=trajectory is not None,
        notes=notes,
    )
