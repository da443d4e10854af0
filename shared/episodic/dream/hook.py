"""`episodic hook session-start` (Claude Code SessionStart): the latest week's hand-off synthesis as
additional context, within `dream_session_start_chars`. Off unless `dream_session_start` is set; every
failure is silent and exits 0 (a hook never blocks a session)."""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING

from episodic.plumbing import envsource

if TYPE_CHECKING:
    from episodic.dream.port import DreamArchive

HEADER = "Latest weekly dream synthesis of this memory (decisions already made, open flags; cite-checked):\n"


def synthesis_context(max_chars: int) -> str | None:
    from episodic.dream.archive import local_archive
    from episodic.kernel.settings import load_settings

    settings = load_settings()
    if not settings.dream_session_start:
        return None
    archive = local_archive(settings.home)  # the records this machine's `episodic dream` wrote
    text = latest_synthesis(archive, settings.tenant)
    if not text:
        return None
    body = HEADER + text
    return body if len(body) <= max_chars else body[: max_chars - 1].rsplit("\n", 1)[0] + "\n…"


def latest_synthesis(archive: DreamArchive, tenant: str) -> str | None:
    """The newest synthesis of a week that had sessions (an empty week's, left by older versions, is skipped)."""
    for week in reversed(archive.weeks(tenant)):
        text = archive.read(tenant, week, "synthesis")
        if text and "\nsessions_analysed: 0\n" not in text:
            record = archive.read(tenant, week) or ""
            if "\nsessions_analysed: 0\n" not in record:
                return text
    return None


def main(stdout: IO[str] | None = None) -> int:
    from episodic.hooks.session_end import GUARD_ENV

    try:
        if envsource.environ().get(GUARD_ENV):
            return 0
        from episodic.kernel.settings import load_settings

        context = synthesis_context(load_settings().dream_session_start_chars)
        if context:
            output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
            (stdout or sys.stdout).write(json.dumps(output) + "\n")
    except Exception:  # fail open and quiet: the session is starting
        return 0
    return 0
