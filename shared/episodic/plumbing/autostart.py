"""Start a detached local `episodic serve` for the prompt hook when none answers (stdlib only).

The prompt that finds no server fails open; the server it starts (same interpreter, same config)
answers the next prompts warm. At most one start per START_GRACE_SECONDS, whoever asks.
A port held by another program (not this home's server: its answers lack this home's IDENTITY_HEADER)
is left to it: the server moves to a free port, saved in the config file, and the hook and setup say so.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

IDENTITY_HEADER = "X-Episodic-Home"  # every answer of `episodic serve` names the home it serves
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
    return _spawn(home, host, port, python)


def _spawn(home: Path, host: str, port: int, python: str | None = None) -> int:
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


def home_identity(home: Path) -> str:
    """What this home's server puts in IDENTITY_HEADER: a digest of the home folder's path (not the path)."""
    return hashlib.sha256(str(home.expanduser().resolve()).encode("utf-8")).hexdigest()[:16]


def free_port(host: str) -> int:
    """A port nothing listens on now (the kernel's pick)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def move_to_free_port(home: Path, config: Path, host: str) -> int | None:
    """Another program holds the configured port: save a free one as `port` in the config file and start
    the server there; the new port, or None when another caller is already starting one (the claim)."""
    from episodic.plumbing import envsource

    home.mkdir(parents=True, exist_ok=True)
    if not _claim(home / STARTED_FILE):
        return None
    port = free_port(host)
    envsource.write_config_value(config, "port", port)
    _spawn(home, host, port)
    return port
