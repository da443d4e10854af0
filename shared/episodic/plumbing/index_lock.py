"""One `index` run per home at a time: a second run waits, then finds the first one's cards unchanged."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_NAME = "index.lock"


@contextlib.contextmanager
def index_lock(home: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on <home>/index.lock (released when the process ends, even killed)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(home / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): best effort, no lock
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
