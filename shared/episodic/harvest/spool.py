"""The SessionEnd hook's spool: enqueue the ended session's transcript and start a detached uploader.

Stdlib only (plus `envsource`), so `episodic hook session-end` returns well within Claude Code's 1.5 s
SessionEnd budget. Every failure exits 0 and prints nothing; it writes one line to the hook log.

Spool: `<home>/spool/session-end.jsonl`, one JSON object a line (`transcript_path`, `session_id`, `cwd`,
`queued_at`). Appends and rewrites hold `<home>/spool/session-end.lock`; one uploader at a time holds
`<home>/spool/uploader.lock` (`episodic harvest --from-spool` removes the entries it finished).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # the hook path imports as little as it can
    from collections.abc import Callable, Iterator
    from typing import IO

SPOOL_DIR = "spool"
SPOOL_FILE = "session-end.jsonl"
SPOOL_LOCK = "session-end.lock"
UPLOADER_LOCK = "uploader.lock"
HOOK_LOG = "session-end-hook.log"
_MAX_STDIN = 1024 * 1024


class SpoolEntry(NamedTuple):
    raw: str  # the line as stored: identifies this entry when it is removed
    transcript_path: str
    session_id: str
    cwd: str


def spool_path(home: Path) -> Path:
    return home / SPOOL_DIR / SPOOL_FILE


@contextlib.contextmanager
def locked(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """An exclusive advisory lock on `path` (True when held; always True where flock does not exist)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory locks, best effort
            yield True
            return
        flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.flock(handle.fileno(), flags)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def uploader_lock(home: Path) -> contextlib.AbstractContextManager[bool]:
    """Held by the one running spool uploader; False when another uploader has it."""
    return locked(home / SPOOL_DIR / UPLOADER_LOCK, blocking=False)


def append_entry(home: Path, transcript_path: str, session_id: str = "", cwd: str = "") -> None:
    entry = {
        "transcript_path": transcript_path,
        "session_id": session_id,
        "cwd": cwd,
        "queued_at": time.time(),
    }
    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
    with locked(home / SPOOL_DIR / SPOOL_LOCK), spool_path(home).open("a", encoding="utf-8") as handle:
        handle.write(line)


def read_entries(home: Path) -> list[SpoolEntry]:
    """The queued entries (lines that are not valid entries are ignored here and dropped on the next rewrite)."""
    try:
        text = spool_path(home).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    entries: list[SpoolEntry] = []
    for line in text.splitlines():
        entry = _parse_entry(line)
        if entry is not None:
            entries.append(entry)
    return entries


def _parse_entry(line: str) -> SpoolEntry | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("transcript_path"), str):
        return None
    return SpoolEntry(
        raw=line,
        transcript_path=data["transcript_path"],
        session_id=str(data.get("session_id") or ""),
        cwd=str(data.get("cwd") or ""),
    )


def remove_entries(home: Path, finished: set[str]) -> int:
    """Drop the finished entries (by their stored line) and unreadable lines; keep everything else,
    including entries appended since they were read. Returns how many entries remain."""
    path = spool_path(home)
    with locked(home / SPOOL_DIR / SPOOL_LOCK):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return 0
        keep = [line for line in lines if line not in finished and _parse_entry(line) is not None]
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(f"{line}\n" for line in keep), encoding="utf-8")
        os.replace(tmp, path)
    return len(keep)


def uploader_command() -> list[str]:
    return [sys.executable, "-m", "episodic", "harvest", "--from-spool"]


def spawn_uploader(home: Path) -> subprocess.Popen[bytes]:
    """Start `episodic harvest --from-spool` detached: its own session, no stdio, survives Claude Code."""
    return subprocess.Popen(
        uploader_command(),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        cwd=str(home),
    )


def _log_failure(home: Path, message: str) -> None:
    with contextlib.suppress(Exception):
        log = home / "logs" / HOOK_LOG
        log.parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"{stamp} session-end: {message[:500]}\n")


def session_end(
    stdin: IO[str] | None = None,
    *,
    home: Path | None = None,
    spawn: Callable[[Path], object] | None = None,
) -> int:
    """The hook: read Claude Code's JSON, enqueue `transcript_path`, spawn the uploader. Always returns 0."""
    resolved_home = home
    try:
        if resolved_home is None:
            from episodic.plumbing import envsource

            resolved_home = envsource.home_dir()
        payload = _read_payload(stdin if stdin is not None else sys.stdin)
        transcript = payload.get("transcript_path")
        if not isinstance(transcript, str) or not transcript.endswith(".jsonl"):
            raise ValueError(f"no transcript_path in the hook input (got {transcript!r})")
        session_id = payload.get("session_id")
        cwd = payload.get("cwd")
        append_entry(
            resolved_home,
            transcript,
            session_id if isinstance(session_id, str) else "",
            cwd if isinstance(cwd, str) else "",
        )
        (spawn or spawn_uploader)(resolved_home)
    except Exception as exc:  # fail open: the session is ending, never make the user wait or see an error
        if resolved_home is not None:
            _log_failure(resolved_home, f"{type(exc).__name__}: {exc}")
    return 0


def _read_payload(stream: IO[str]) -> dict[str, Any]:
    text = stream.read(_MAX_STDIN)
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the hook input is not a JSON object")
    return data


def main() -> int:
    """Entry for a fast dispatch (`episodic hook session-end` before click is imported)."""
    return session_end()
