"""Which agent wrote a session file, told by its first bytes (never by its name), and each agent's roots."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from episodic.kernel.settings import Settings
from episodic.parse.discovery import NOT_TRANSCRIPTS, SKIP_DIRS
from episodic.parse.reader import CODEX_TYPES
from episodic.plumbing import bounded

CLAUDE_CODE = "claude-code"
CODEX = "codex"
GEMINI = "gemini"
COMPRESSED_SUFFIX = ".zst"
_SNIFF_BYTES = 8192
_KEY_RE = re.compile(rb'^\s*"(sessionId|projectHash|messages|startTime|lastUpdated)"\s*:', re.M)
# a Codex line's envelope, read from its start: a session_meta line carries the whole system prompt
# (`base_instructions`, ~21 KB in current releases), far past the sniffed bytes, so it cannot be parsed here
_CODEX_ENVELOPE_RE = re.compile(
    rb'^\{\s*(?:"\w+"\s*:\s*(?:"[^"\\]*"|-?\d+)\s*,\s*)*"type"\s*:\s*"('  # `timestamp`, 0.171's `ordinal`
    + b"|".join(sorted(t.encode() for t in CODEX_TYPES))
    + rb')"\s*,\s*"payload"\s*:\s*\{'
)


def sniff(head: bytes, name: str = "") -> str | None:
    """claude-code | codex | gemini for a session file's first bytes; None when they say nothing."""
    if name.endswith(".jsonl" + COMPRESSED_SUFFIX):
        return CODEX  # zstd bytes cannot be read without decompressing; only Codex writes these
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    first_line = text.split(b"\n", 1)[0]
    try:  # bounded: a hostile first line (deep nesting, huge integers) is "says nothing", never a crash
        first = bounded.loads(first_line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        first = None
    if first is None and _CODEX_ENVELOPE_RE.match(first_line):
        return CODEX  # a first line longer than the sniffed bytes: its envelope says enough
    if isinstance(first, dict):
        if "payload" in first and first.get("type") in CODEX_TYPES:
            return CODEX
        if isinstance(first.get("projectHash"), str) or "$set" in first:
            return GEMINI
        return CLAUDE_CODE
    # a pretty-printed document: the older Gemini CLI form ({"sessionId", "projectHash", "messages"})
    keys = {m.group(1) for m in _KEY_RE.finditer(text[:_SNIFF_BYTES])}
    if b"sessionId" in keys and (b"messages" in keys or b"projectHash" in keys):
        return GEMINI
    return None


def sniff_file(path: Path) -> str | None:
    """The agent whose format the file holds; None for a FIFO, device or unreadable file (never blocks)."""
    try:
        head, _ = bounded.read_head(path, _SNIFF_BYTES)
    except OSError:
        return None
    return sniff(head, path.name)


def _is_candidate(path: Path) -> bool:
    name = path.name
    return (
        name.endswith((".jsonl", ".json", ".jsonl" + COMPRESSED_SUFFIX))
        and name not in NOT_TRANSCRIPTS
        and not SKIP_DIRS.intersection(path.parts)
    )


def candidate_files(bases: Iterable[Path]) -> list[Path]:
    """Every file under the bases that may hold a session of any agent (files or folders, recursive)."""
    found: set[Path] = set()
    for base in bases:
        if not base.is_dir() and (base.exists() or base.is_symlink()):
            found.add(base)  # named by hand: its content decides (a FIFO or a loop: reported as skipped)
            continue
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            found.update(p for p in (Path(folder) / n for n in files) if _is_candidate(p))
    return sorted(found)


def by_format(paths: Iterable[Path], unreadable_to: str | None = None) -> dict[str, list[Path]]:
    """Files sorted by the agent whose format they hold; files that say nothing go to Claude Code's
    parser only when named .jsonl (it reports them as empty or malformed, as before).

    A file that cannot be read (a FIFO, a device, a symlink loop) goes to `unreadable_to` (the agent whose
    own folders are searched), else to the agent its name suggests: its parser counts it as skipped."""
    out: dict[str, list[Path]] = {CLAUDE_CODE: [], CODEX: [], GEMINI: []}
    for path in paths:
        try:
            head, _ = bounded.read_head(path, _SNIFF_BYTES)  # never blocks: regular files only
        except OSError:
            out[unreadable_to or agent_by_name(path)].append(path)
            continue
        kind = sniff(head, path.name)
        if kind is None and path.suffix == ".jsonl":
            kind = CLAUDE_CODE
        if kind is not None:
            out[kind].append(path)
    return out


def agent_by_name(path: Path) -> str:
    """The agent whose files are named like this one (only for a file whose bytes cannot be read)."""
    if path.name.endswith(".jsonl" + COMPRESSED_SUFFIX) or path.name.startswith("rollout-"):
        return CODEX
    if path.suffix == ".json" or path.parent.name == "chats":
        return GEMINI
    return CLAUDE_CODE


def codex_roots(settings: Settings) -> list[Path]:
    """`$CODEX_HOME` (default ~/.codex) `/sessions` and `/archived_sessions`, those that exist."""
    if settings.codex_home:
        home = Path(settings.codex_home).expanduser()
    elif settings.user_home:
        home = Path(settings.user_home) / ".codex"
    else:
        return []
    return [home / name for name in ("sessions", "archived_sessions") if (home / name).is_dir()]


def gemini_roots(settings: Settings) -> list[Path]:
    """`$GEMINI_CLI_HOME` (default ~) `/.gemini/tmp`, where each project's `chats/` live."""
    base = settings.gemini_cli_home or settings.user_home
    if not base:
        return []
    root = Path(base).expanduser() / ".gemini" / "tmp"
    return [root] if root.is_dir() else []
