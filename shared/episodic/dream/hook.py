"""`episodic hook session-start` (Claude Code SessionStart): the latest week's hand-off synthesis as
additional context, within `dream_session_start_chars`. Off unless `dream_session_start` is set; every
failure is silent and exits 0 (a hook never blocks a session)."""

from __future__ import annotations

import json
import sys
from typing import IO

from episodic import envsource

HEADER = "Latest weekly dream synthesis of this memory (decisions already made, open flags; cite-checked):\n"


def synthesis_context(max_chars: int) -> str | None:
    from episodic.dream.archive import LocalArchive
    from episodic.settings import load_settings

    settings = load_settings()
    if not settings.dream_session_start:
        return None
    archive = LocalArchive(settings.home / "dreams")
    weeks = archive.weeks(settings.tenant)
    text = archive.read(settings.tenant, weeks[-1], "synthesis") if weeks else None
    if not text:
        return None
    body = HEADER + text
    return body if len(body) <= max_chars else body[: max_chars - 1].rsplit("\n", 1)[0] + "\n…"


def main(stdout: IO[str] | None = None) -> int:
    from episodic.session_distill import GUARD_ENV

    try:
        if envsource.environ().get(GUARD_ENV):
            return 0
        from episodic.settings import load_settings

        context = synthesis_context(load_settings().dream_session_start_chars)
        if context:
            output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
            (stdout or sys.stdout).write(json.dumps(output) + "\n")
    except Exception:  # fail open and quiet: the session is starting
        return 0
    return 0
