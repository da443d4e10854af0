"""Sessions that are not episodes: memory tools' own runs, our distiller's runs, leftovers, empty files."""

from __future__ import annotations

import re

from episodic.parse.builder import RawSession
from episodic.plumbing.marker import DISTILLER_MARKER

# Other memory tools mark their summariser prompts (obra/episodic-memory src/constants.ts and sync.ts).
MEMORY_TOOL_MARKERS = (
    "Context: This summary will be shown in a list to help users and Claude choose which conversations are relevant",
    "<INSTRUCTIONS-TO-EPISODIC-MEMORY>DO NOT INDEX THIS CHAT</INSTRUCTIONS-TO-EPISODIC-MEMORY>",
    "Only use NO_INSIGHTS_FOUND",
)
# A headless run whose first words ask to summarise a conversation (older obra summariser, no marker).
_SUMMARISE_LEAD_RE = re.compile(
    r"^\s*(?:please\s+)?(?:summari[sz]e|write\s+(?:a\s+)?(?:short\s+|concise\s+|brief\s+)?summary\s+of)\s+"
    r"(?:this|the\s+following|the)\s+(?:part\s+of\s+(?:a|the)\s+)?(?:conversation|exchange|transcript|session)",
    re.I,
)
_SNAPSHOT_TYPES = ("file-history-snapshot", "summary")


def not_episode_reason(session: RawSession, main_agent: str | None) -> str | None:
    """Why this session is not an episode to index, or None when it is one."""
    texts = session.user_texts
    if any(DISTILLER_MARKER in text for text in texts):
        return "distiller-run"
    if any(marker in text for text in texts for marker in MEMORY_TOOL_MARKERS):
        return "memory-summariser"
    main_prompts = [e.text for e in session.events if e.kind == "prompt" and e.agent_id == main_agent]
    tool_calls = sum(1 for e in session.events if e.kind == "tool")
    if (
        main_prompts
        and len(main_prompts) <= 2
        and tool_calls == 0
        and _SUMMARISE_LEAD_RE.match(main_prompts[0])
    ):
        return "memory-summariser"
    spoke = session.entry_types.get("user", 0) + session.entry_types.get("assistant", 0)
    if spoke == 0:
        snapshots = session.stats.skipped_entry_types.get("file-history-snapshot", 0)
        if snapshots or session.entry_types.get("summary", 0):
            others = set(session.entry_types) - set(_SNAPSHOT_TYPES)
            if not others:
                return "snapshot-only"
        if session.stats.lines and session.stats.malformed_lines + session.stats.truncated_last_line >= (
            session.stats.lines
        ):
            return "malformed"
        return "empty"
    has_text = any(e.kind == "assistant" for e in session.events)
    if not main_prompts and not has_text:
        return "empty"
    notices = session.stats.skipped_entry_types.get("assistant:synthetic", 0)
    if notices and not has_text and not tool_calls and not session.models:
        # only the client's own notice answered: e.g. `claude -p` printing "Not logged in · Please run /login"
        return "no-model-turn"
    return None
