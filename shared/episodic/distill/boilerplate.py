"""Agent-CLI boilerplate: text a coding agent's CLI (or a hook) prints about the session itself, never a
decision, a step or a lesson of the work ("To resume the other session instead, exit Claude and run:
claude -r 0276a600-…"). The heuristic distiller drops a card item that reads so; `cards check` counts them.
Rules as data: (name, pattern); real examples in tests/unit/distill/test_card_holes.py."""

from __future__ import annotations

import re
from functools import lru_cache

BOILERPLATE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Claude Code / Codex / Gemini CLI: how to reopen a session by its id
    (
        "resume command",
        re.compile(
            r"(?i)\b(?:claude\s+(?:-r|--resume|-c|--continue)|codex\s+resume|gemini\s+(?:-r|--resume))"
            r"(?:\s+[\w-]+)?\s*[.]?\s*$"
        ),
    ),
    # Claude Code's marker in the transcript when the user pressed Esc
    ("interrupted marker", re.compile(r"(?i)^\[?request interrupted by user")),
)


@lru_cache(maxsize=4096)
def boilerplate_of(text: str) -> str | None:
    """The name of the boilerplate rule `text` matches, or None."""
    stripped = text.strip()
    return next((name for name, pattern in BOILERPLATE_RULES if pattern.search(stripped)), None)


# A tool's own status line, said back by the assistant: what a command printed, never the task a session was
# about ("Already up to date — your branch already has all of main's changes."). Rules as data, anchored at the
# sentence's start; real examples in tests/functional/test_offline_card_problem.py.
TOOL_OUTPUT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "git status line",
        re.compile(
            r"(?i)^\W*(?:already up[- ]to[- ]date|everything up[- ]to[- ]date|nothing to commit"
            r"|(?:your )?(?:branch|working tree) is (?:up[- ]to[- ]date|clean|ahead|behind)"
            r"|no (?:local )?changes(?: to commit| added to commit)?\b|fast[- ]forward(?:ed)?\b"
            r"|switched to (?:a new )?branch|no (?:active )?(?:merge )?conflicts?\b)"
        ),
    ),
    (
        "package manager status",
        re.compile(r"(?i)^\W*(?:up to date, audited|found 0 vulnerabilities|all done!?$)"),
    ),
)


@lru_cache(maxsize=4096)
def tool_output_of(text: str) -> str | None:
    """The name of the tool-output rule `text` (a sentence) matches, or None."""
    stripped = text.strip()
    return next((name for name, pattern in TOOL_OUTPUT_RULES if pattern.search(stripped)), None)
