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
