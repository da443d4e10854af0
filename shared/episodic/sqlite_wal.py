"""Switch a SQLite connection to WAL even when another process is opening the same new file.

Two connections switching a fresh database to WAL at once deadlock on the exclusive lock, and SQLite
answers one of them "database is locked" at once, without waiting out the busy timeout (measured: 24 of
40 paired opens failed). The loser retries: by then the winner has switched the file, which makes the
pragma a no-op. Two `episodic index` runs, or the hook and an index, can open a new home together.
"""

from __future__ import annotations

import sqlite3
import time

_FIRST_PAUSE_S = 0.005
_LONGEST_PAUSE_S = 0.1


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """`PRAGMA journal_mode=WAL`, retried while the file is locked, for at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pause = _FIRST_PAUSE_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_S)
