"""`episodic resume` of a Claude Code session whose folder is gone: put its transcript where Claude Code
looks from the current folder, or say exactly what to do.

Claude Code finds `claude --resume ID` in `<config>/projects/<slug of the current folder>/ID.jsonl` (the slug:
every character but a letter or digit becomes `-`; a slug over 200 characters gets a hash suffix we cannot
compute, so then we say what to do instead of guessing).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

SLUG_MAX = 200  # Claude Code's limit before it appends a hash of the path


def project_slug(cwd: str) -> str | None:
    """The projects/ folder name Claude Code uses for `cwd`; None when it would carry a hash suffix."""
    slug = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    return slug if len(slug) <= SLUG_MAX else None


def find_transcript(session_id: str, known: str, roots: Iterable[Path]) -> Path | None:
    """The session's transcript: where it was indexed from, else any Claude Code projects/ folder."""
    if known and Path(known).is_file():
        return Path(known)
    for root in roots:
        for found in sorted((root / "projects").glob(f"*/{session_id}.jsonl")):
            return found
    return None


def place_for_resume(session_id: str, transcript: Path | None, config_dir: Path, cwd: str, gone: str) -> str:
    """Copy the transcript (and its subagents' folder) under the current folder's project, so `claude
    --resume` finds it here; what was done, for the user. Raises ValueError with what to do instead."""
    slug = project_slug(cwd)
    if transcript is None:
        raise ValueError(
            f"the folder {gone} is gone and Claude Code no longer has the transcript of {session_id} (its "
            "cleanup deletes old ones): nothing to resume. `episodic history show "
            f"{session_id[:8]}` shows what was said."
        )
    if slug is None:
        raise ValueError(
            f"the folder {gone} is gone: recreate it (`mkdir -p {gone}`) and run `episodic resume "
            f"{session_id[:8]}` again, or run it from a folder with a shorter path"
        )
    target = config_dir / "projects" / slug / f"{session_id}.jsonl"
    if target.exists():
        return f"the folder {gone} is gone; resuming from here ({cwd}), where Claude Code has the session"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(transcript, target)
    companions = transcript.with_suffix("")  # <id>/subagents/… beside the main file
    if companions.is_dir() and not target.with_suffix("").exists():
        shutil.copytree(companions, target.with_suffix(""))
    return (
        f"the folder {gone} is gone: copied the transcript to {target} so Claude Code finds the session "
        f"from here ({cwd}); resuming here"
    )
