"""The one way episodic opens its SQLite files (index, history, scratch memory, embedding cache).

A connection is shared by a process's threads (each store guards it with a lock), autocommits outside
explicit transactions, waits out other processes' locks up to a busy timeout, and runs in WAL mode.

Two connections switching a fresh database to WAL at once deadlock on the exclusive lock, and SQLite
answers one of them "database is locked" at once, without waiting out the busy timeout (measured: 24 of
40 paired opens failed). The loser retries: by then the winner has switched the file, which makes the
pragma a no-op. Two `episodic index` runs, or the hook and an index, can open a new home together.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_FIRST_PAUSE_S = 0.005
_LONGEST_PAUSE_S = 0.1


def open_connection(
    path: Path | str, busy_timeout_ms: int, *, before_wal: Sequence[str] = ()
) -> sqlite3.Connection:
    """A connection in WAL mode (not for ":memory:"); `before_wal` pragmas run first (e.g. page_size)."""
    conn = sqlite3.connect(
        path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
    )
    for pragma in before_wal:
        conn.execute(pragma)
    if str(path) != ":memory:":
        enable_wal(conn, busy_timeout_ms / 1000)
    return conn


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


@contextmanager
def transaction(
    conn: sqlite3.Connection, lock: threading.Lock | threading.RLock, *, write: bool = True
) -> Iterator[sqlite3.Connection]:
    """BEGIN (IMMEDIATE for a write, so two writers queue instead of failing on upgrade) … COMMIT, under
    the store's lock; ROLLBACK on any exception."""
    with lock:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


class TenantTableFile:
    """A feature's own SQLite file holding one table of per-tenant, per-session rows (scratch memory, failure
    memory): one shared connection behind a lock, its schema applied, the session delete and the count."""

    table: str  # a constant name, never input

    def __init__(self, path: Path | str, schema: str, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = open_connection(self.path, busy_timeout_ms)
        self._conn.executescript(schema)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def delete_session(self, tenant_id: str, session_id: str) -> int:
        with self._lock:
            return delete_session_rows(self._conn, self.table, tenant_id, session_id)

    def count(self, tenant_id: str | None = None) -> int:
        with self._lock:
            return count_rows(self._conn, self.table, tenant_id)


def delete_session_rows(conn: sqlite3.Connection, table: str, tenant_id: str, session_id: str) -> int:
    """Delete one tenant's rows of one session from a feature's table (a constant name, never input)."""
    return conn.execute(
        f"DELETE FROM {table} WHERE tenant_id = ? AND session_id = ?", (tenant_id, session_id)
    ).rowcount


def count_rows(conn: sqlite3.Connection, table: str, tenant_id: str | None = None) -> int:
    """Rows of a feature's table: one tenant's, or (tenant None: the operator's statistics) all."""
    if tenant_id is None:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    else:
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return int(row[0])
