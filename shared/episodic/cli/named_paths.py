"""Paths a user names on the command line that hold no session: said with why, before anything is read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def not_sessions(paths: Sequence[str]) -> list[str]:
    """Files named on the command line that no agent's format holds, each with why (a README, a log)."""
    from episodic.parse.formats import sniff
    from episodic.plumbing import bounded

    found = []
    for typed in paths:
        path = Path(typed).expanduser()
        if not path.is_file() or path.suffix == ".jsonl":  # a .jsonl: its parser reports what it holds
            continue
        try:
            head, _ = bounded.read_head(path, 8192)
        except OSError:
            continue  # unreadable: the parser reports it skipped
        if sniff(head, path.name) is None:
            what = "a JSON file of none of their shapes" if head.lstrip().startswith(b"{") else "not JSON"
            found.append(
                f"{typed} is not a session: not a Claude Code transcript, Codex CLI rollout or Gemini CLI "
                f"chat ({what}; their files are JSON lines under ~/.claude/projects, ~/.codex/sessions, "
                "~/.gemini/tmp)"
            )
    return found
