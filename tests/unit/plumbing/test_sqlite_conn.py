"""Opening one new SQLite file from two processes at once: both end in WAL, neither fails."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from episodic.plumbing.sqlite_conn import enable_wal, open_connection, transaction
from episodic.store.sqlite import SQLiteStore

_ROUNDS = 10  # the bare pragma lost this race in 24 of 40 paired opens: ten rounds all but ensure one


def _open_with_helper(path: str, barrier: Any, results: Any) -> None:
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    conn.execute("PRAGMA page_size=8192")  # as the store does: no lock taken yet
    barrier.wait()
    try:
        enable_wal(conn, 10.0)
        results.put(conn.execute("PRAGMA journal_mode").fetchone()[0])
    except sqlite3.Error as exc:
        results.put(f"error: {exc}")


def _open_store(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        with SQLiteStore(path) as store:
            results.put(store._conn.execute("PRAGMA journal_mode").fetchone()[0])
    except sqlite3.Error as exc:
        results.put(f"error: {exc}")


@pytest.mark.parametrize("target", [_open_with_helper, _open_store])
def test_two_processes_opening_a_new_database_at_once_both_get_wal(tmp_path: Path, target: Any) -> None:
    ctx = mp.get_context("fork")
    outcomes: list[str] = []
    for round_ in range(_ROUNDS):
        path = str(tmp_path / f"race-{round_}.sqlite3")
        barrier, results = ctx.Barrier(2), ctx.Queue()
        workers = [ctx.Process(target=target, args=(path, barrier, results)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        outcomes += [results.get(timeout=5) for _ in workers]
    assert outcomes == ["wal"] * (2 * _ROUNDS)


def test_an_error_other_than_a_lock_is_raised_at_once(tmp_path: Path) -> None:
    path = tmp_path / "not-a-database.sqlite3"
    path.write_bytes(b"this is not a database file, just text" * 100)
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        enable_wal(conn, 30.0)  # no retrying for 30 s: only "locked" is worth waiting for


def test_a_failed_transaction_rolls_back_and_frees_the_lock(tmp_path: Path) -> None:
    import threading

    conn, lock = open_connection(tmp_path / "t.sqlite3", 1000), threading.Lock()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("CREATE TABLE t (n INTEGER)")
    with pytest.raises(ValueError), transaction(conn, lock) as tx:
        tx.execute("INSERT INTO t VALUES (1)")
        raise ValueError("boom")
    with transaction(conn, lock) as tx:  # the lock was released and no transaction is left open
        tx.execute("INSERT INTO t VALUES (2)")
    assert [row[0] for row in conn.execute("SELECT n FROM t")] == [2]
    assert open_connection(":memory:", 1000).execute("PRAGMA journal_mode").fetchone()[0] == "memory"
