"""Start a detached local `episodic serve` for the prompt hook when none answers (stdlib only).

The prompt that finds no server fails open; the server it starts (same interpreter, same config)
answers the next prompts warm. At most one start per START_GRACE_SECONDS, whoever asks.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

START_GRACE_SECONDS = 60.0  # a server loading its model takes seconds; do not start a second meanwhile
PID_FILE = "serve.pid"
STARTED_FILE = "serve.started"


def _claim(marker: Path) -> bool:
    """True for the one caller that may start a server now (an O_EXCL create; a stale marker is reclaimed)."""
    with contextlib.suppress(FileNotFoundError):
        if time.time() - marker.stat().st_mtime < START_GRACE_SECONDS:
            return False
        marker.unlink()
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def start_local_server(home: Path, host: str, port: int, python: str | None = None) -> int | None:
    """Spawn `python -m episodic serve` on host:port, detached (its own session); its pid, or None if not now."""
    home.mkdir(parents=True, exist_ok=True)
    if not _claim(home / STARTED_FILE):
        return None
    (home / "logs").mkdir(parents=True, exist_ok=True)
    with open(home / "logs" / "serve.log", "ab") as log:
        process = subprocess.Popen(
            [python or sys.executable, "-m", "episodic", "serve", "--host", host, "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # outlives the hook and the Claude Code session that ran it
            close_fds=True,
        )
    (home / PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
    return process.pid
