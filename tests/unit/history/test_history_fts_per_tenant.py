"""The SQLite history keeps each tenant's text in its own FTS5 table (its own BM25 statistics), and a
version-1 file (one shared FTS table) is split by tenant on open, losing nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from episodic.history.models import HistoryFilters
from episodic.history.sqlite_store import SCHEMA_VERSION, SQLiteHistoryStore
from kits.history_kit import RECORDS
from kits.mcp_testkit import ALPHA, BETA

_V1 = (
    "CREATE TABLE history_sessions (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
    "source_sha256 TEXT NOT NULL, project TEXT NOT NULL, started_ts REAL, record TEXT NOT NULL, "
    "UNIQUE (tenant_id, session_id))",
    "CREATE INDEX history_sessions_time ON history_sessions (tenant_id, started_ts)",
    "CREATE VIRTUAL TABLE history_fts USING fts5(body, tokenize='unicode61 remove_diacritics 2')",
    "CREATE TABLE history_links (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
    "item TEXT NOT NULL, kind TEXT NOT NULL, origin TEXT NOT NULL, linked_at TEXT NOT NULL, link TEXT NOT NULL)",
    "CREATE INDEX history_links_item ON history_links (tenant_id, item)",
    "CREATE INDEX history_links_session ON history_links (tenant_id, session_id)",
)


def _ranked(store: SQLiteHistoryStore, tenant: str, query: str) -> list[tuple[str, float]]:
    return [(m.session_id, m.score) for m in store.match(tenant, query, HistoryFilters(), 20)]


def _write_v1(path: Path) -> None:
    conn = sqlite3.connect(path)
    for statement in _V1:
        conn.execute(statement)
    for r in RECORDS:
        cursor = conn.execute(
            "INSERT INTO history_sessions (tenant_id, session_id, source_sha256, project, started_ts, record) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (r.tenant_id, r.session_id, r.source_sha256, r.project, None, r.model_dump_json()),
        )
        conn.execute(
            "INSERT INTO history_fts (rowid, body) VALUES (?, ?)", (cursor.lastrowid, r.search_text())
        )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_a_version_one_file_is_split_by_tenant(tmp_path: Path) -> None:
    fresh = SQLiteHistoryStore(tmp_path / "fresh.sqlite3")
    for r in RECORDS:
        fresh.put(r)
    _write_v1(tmp_path / "old.sqlite3")
    migrated = SQLiteHistoryStore(tmp_path / "old.sqlite3")
    assert int(migrated._conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION
    tables = {row[0] for row in migrated._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "history_fts" not in tables
    for tenant in (ALPHA, BETA):
        for query in ("worktree", "pytest fixture", "postgres pool"):
            assert _ranked(migrated, tenant, query) == _ranked(fresh, tenant, query)
            assert _ranked(migrated, tenant, query), (tenant, query)
    assert SQLiteHistoryStore(tmp_path / "old.sqlite3").count(ALPHA) == 3  # reopened: nothing to migrate


def test_forget_and_replace_touch_only_the_tenants_own_table(tmp_path: Path) -> None:
    store = SQLiteHistoryStore(tmp_path / "h.sqlite3")
    for r in RECORDS:
        store.put(r)
    beta_before = _ranked(store, BETA, "worktree")
    assert store.forget(ALPHA, "alpha-pytest-fixture")
    grown = RECORDS[2].model_copy(update={"source_sha256": "b" * 64})
    assert store.put(grown)
    assert [sid for sid, _ in _ranked(store, ALPHA, "worktree")] == ["alpha-postgres-pool"]
    assert _ranked(store, BETA, "worktree") == beta_before
    assert _ranked(store, "nobody", "worktree") == []  # a tenant with no text yet: no table, no hits
