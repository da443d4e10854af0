"""The embedded history store: its own SQLite file beside the card index (`history.sqlite3`).

A separate file, not tables in the card index: the history has its own schema and lifecycle (it can be
rebuilt from the transcripts at any time without touching cards or their embedding manifest), and
the card index's migrations stay the card index's. One FTS5 row per turn, one for the summaries and one for
the metadata, so a match can say which turns mention a topic and how often.

Each tenant's text is in its own FTS5 table (`history_fts_<n>`, numbered in `history_tenant_fts`):
`bm25()` takes its document count and average length from the whole table, so one shared table
let another tenant's writes move a tenant's scores (and reveal which words its history holds).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path

from episodic.history.models import HistoryFilters, HistoryRecord, SessionMatch, WorkLink
from episodic.history.port import HistoryStore
from episodic.history.terms import describe_match, fts_query, query_terms, stem
from episodic.plumbing.sqlite_conn import open_connection, transaction
from episodic.store.parity import require_tenant

HISTORY_FILE = "history.sqlite3"  # beside the card index in the home folder

SCHEMA_VERSION = 2
_FTS = "USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
_TENANT_TABLES = "CREATE TABLE history_tenant_fts (n INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL UNIQUE)"
_SCHEMA = (
    "CREATE TABLE history_sessions (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
    "source_sha256 TEXT NOT NULL, project TEXT NOT NULL, started_ts REAL, record TEXT NOT NULL, "
    "UNIQUE (tenant_id, session_id))",
    "CREATE INDEX history_sessions_time ON history_sessions (tenant_id, started_ts)",
    # per tenant, same tokenizer as the cards' keyword index: exact words, no stemming; queries add prefix
    # matching. One row per session, rowid = the session's row id: one BM25 per matching session
    _TENANT_TABLES,
    "CREATE TABLE history_links (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
    "item TEXT NOT NULL, kind TEXT NOT NULL, origin TEXT NOT NULL, linked_at TEXT NOT NULL, link TEXT NOT NULL)",
    "CREATE INDEX history_links_item ON history_links (tenant_id, item)",
    "CREATE INDEX history_links_session ON history_links (tenant_id, session_id)",
)


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value else None


class SQLiteHistoryStore(HistoryStore):
    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._tables: dict[str, str] = {}  # tenant -> its committed FTS table
        self._conn = open_connection(path, busy_timeout_ms)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _migrate(self) -> None:
        with self._transaction() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version == 0:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif version == 1:
                self._split_fts_by_tenant(conn)
            elif version > SCHEMA_VERSION:
                from episodic.kernel.errors import ConfigError

                raise ConfigError(
                    f"history store {self.path} has schema version {version}, newer than this "
                    f"episodic understands ({SCHEMA_VERSION}); upgrade episodic"
                )

    def _split_fts_by_tenant(self, conn: sqlite3.Connection) -> None:
        """Version 1 -> 2: the one shared FTS table becomes one per tenant (same rows, same rowids)."""
        conn.execute(_TENANT_TABLES)
        tenants = [row[0] for row in conn.execute("SELECT DISTINCT tenant_id FROM history_sessions")]
        for tenant in tenants:
            table = self._fts_table(conn, tenant, create=True)
            conn.execute(
                f"INSERT INTO {table} (rowid, body) SELECT rowid, body FROM history_fts "
                "WHERE rowid IN (SELECT id FROM history_sessions WHERE tenant_id = ?)",
                (tenant,),
            )
        conn.execute("DROP TABLE history_fts")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _fts_table(self, conn: sqlite3.Connection, tenant: str, *, create: bool) -> str | None:
        """The tenant's FTS table (created for a write when it has none yet); None: no text stored."""
        known = self._tables.get(tenant)
        if known is not None:
            return known
        row = conn.execute("SELECT n FROM history_tenant_fts WHERE tenant_id = ?", (tenant,)).fetchone()
        if row is not None:
            self._tables[tenant] = f"history_fts_{int(row[0])}"  # committed: safe to remember
            return self._tables[tenant]
        if not create:
            return None
        n = conn.execute("INSERT INTO history_tenant_fts (tenant_id) VALUES (?)", (tenant,)).lastrowid
        table = f"history_fts_{int(n or 0)}"  # not remembered until a later read: this write may roll back
        conn.execute(f"CREATE VIRTUAL TABLE {table} {_FTS}")
        return table

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn, self._lock)

    # ------------------------------------------------------------------ records

    def stored_sha(self, tenant_id: str, session_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT source_sha256 FROM history_sessions WHERE tenant_id = ? AND session_id = ?",
                (require_tenant(tenant_id), session_id),
            ).fetchone()
        return str(row[0]) if row else None

    def put(self, record: HistoryRecord) -> bool:
        tenant = require_tenant(record.tenant_id)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, source_sha256 FROM history_sessions WHERE tenant_id = ? AND session_id = ?",
                (tenant, record.session_id),
            ).fetchone()
            if row and row[1] == record.source_sha256:
                return False
            values = (record.source_sha256, record.project, _ts(record.started_at), record.model_dump_json())
            table = self._fts_table(conn, tenant, create=True)
            if row:
                sid = int(row[0])
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (sid,))
                conn.execute(
                    "UPDATE history_sessions SET source_sha256 = ?, project = ?, started_ts = ?, record = ? "
                    "WHERE id = ?",
                    (*values, sid),
                )
            else:
                cursor = conn.execute(
                    "INSERT INTO history_sessions (tenant_id, session_id, source_sha256, project, started_ts, "
                    "record) VALUES (?, ?, ?, ?, ?, ?)",
                    (tenant, record.session_id, *values),
                )
                sid = int(cursor.lastrowid or 0)
            conn.execute(f"INSERT INTO {table} (rowid, body) VALUES (?, ?)", (sid, record.search_text()))
        return True

    def forget(self, tenant_id: str, session_id: str) -> bool:
        tenant = require_tenant(tenant_id)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id FROM history_sessions WHERE tenant_id = ? AND session_id = ?", (tenant, session_id)
            ).fetchone()
            links = conn.execute(
                "DELETE FROM history_links WHERE tenant_id = ? AND session_id = ?", (tenant, session_id)
            ).rowcount
            table = self._fts_table(conn, tenant, create=False)
            if row and table is not None:
                conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (int(row[0]),))
            if row:
                conn.execute("DELETE FROM history_sessions WHERE id = ?", (int(row[0]),))
        return bool(row) or links > 0

    def get(self, tenant_id: str, session_id: str) -> HistoryRecord | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT record FROM history_sessions WHERE tenant_id = ? AND session_id = ?",
                (require_tenant(tenant_id), session_id),
            ).fetchone()
        return HistoryRecord.model_validate_json(row[0]) if row else None

    def count(self, tenant_id: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM history_sessions WHERE tenant_id = ?", (require_tenant(tenant_id),)
            ).fetchone()
        return int(row[0])

    @staticmethod
    def _where(tenant: str, filters: HistoryFilters, alias: str = "") -> tuple[str, list[object]]:
        prefix = f"{alias}." if alias else ""
        clauses: list[str] = [f"{prefix}tenant_id = ?"]
        args: list[object] = [tenant]
        if filters.since is not None:
            clauses.append(f"{prefix}started_ts >= ?")
            args.append(filters.since.timestamp())
        if filters.until is not None:
            clauses.append(f"{prefix}started_ts < ?")
            args.append(filters.until.timestamp())
        if filters.project:
            clauses.append(f"{prefix}project = ?")
            args.append(filters.project)
        if filters.session_id:
            clauses.append(f"{prefix}session_id = ?")
            args.append(filters.session_id)
        return " AND ".join(clauses), args

    def session_ids_starting(self, tenant_id: str, prefix: str, limit: int = 20) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id FROM history_sessions WHERE tenant_id = ? AND substr(session_id, 1, ?) = ? "
                "ORDER BY session_id LIMIT ?",
                (require_tenant(tenant_id), len(prefix), prefix, limit),
            ).fetchall()
        return [row[0] for row in rows]

    def sessions(self, tenant_id: str, filters: HistoryFilters) -> list[HistoryRecord]:
        where, args = self._where(require_tenant(tenant_id), filters)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT record FROM history_sessions WHERE {where} ORDER BY started_ts, session_id", args
            ).fetchall()
        return [HistoryRecord.model_validate_json(row[0]) for row in rows]

    # ------------------------------------------------------------------ full text

    def match(
        self, tenant_id: str, query: str, filters: HistoryFilters, limit: int, *, some_words: bool = False
    ) -> list[SessionMatch]:
        tenant = require_tenant(tenant_id)
        words = query_terms(query)
        if not words:
            return []
        terms = [stem(word) for word in words]
        where, args = self._where(tenant, filters, "h")
        with self._lock:
            table = self._fts_table(self._conn, tenant, create=False)
            if table is None:
                return []
            # how many of the terms a session holds, one FTS lookup a term: the sessions holding all come first
            held = " + ".join(f"(h.id IN (SELECT rowid FROM {table} WHERE {table} MATCH ?))" for _ in terms)
            ranked = self._conn.execute(  # ids and scores only: a record is read for the best `limit` alone
                f"SELECT h.id, bm25({table}) AS rank, {held if some_words else '0'} AS held FROM {table} "
                f"JOIN history_sessions h ON h.id = {table}.rowid "
                f"WHERE {table} MATCH ? AND {where} ORDER BY held DESC, rank, h.session_id LIMIT ?",
                [
                    *([fts_query([term]) for term in terms] if some_words else []),
                    fts_query(terms, every=not some_words),
                    *args,
                    limit,
                ],
            ).fetchall()
            marks = ",".join("?" * len(ranked))
            raw = dict(
                self._conn.execute(
                    f"SELECT id, record FROM history_sessions WHERE id IN ({marks})",
                    [sid for sid, _, _ in ranked],
                ).fetchall()
            )
        return [
            describe_match(HistoryRecord.model_validate_json(raw[sid]), terms, -float(rank), words)
            for sid, rank, _ in ranked
        ]

    # ------------------------------------------------------------------ links

    def add_links(self, links: Sequence[WorkLink]) -> int:
        added = 0
        with self._transaction() as conn:
            for link in links:
                tenant = require_tenant(link.tenant_id)
                if (
                    link.origin == "detected"
                    and conn.execute(
                        "SELECT 1 FROM history_links WHERE tenant_id = ? AND session_id = ? AND item = ?",
                        (tenant, link.session_id, link.item),
                    ).fetchone()
                ):
                    continue  # a detection is a fact about the session: recorded once
                conn.execute(
                    "INSERT INTO history_links (tenant_id, session_id, item, kind, origin, linked_at, link) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        tenant,
                        link.session_id,
                        link.item,
                        link.kind,
                        link.origin,
                        link.linked_at.isoformat(),
                        link.model_dump_json(),
                    ),
                )
                added += 1
        return added

    def links(
        self, tenant_id: str, *, session_id: str | None = None, item: str | None = None
    ) -> list[WorkLink]:
        clauses, args = ["tenant_id = ?"], [require_tenant(tenant_id)]
        if session_id is not None:
            clauses.append("session_id = ?")
            args.append(session_id)
        if item is not None:
            clauses.append("item = ? COLLATE NOCASE")
            args.append(item)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT link FROM history_links WHERE {' AND '.join(clauses)} ORDER BY linked_at DESC, id DESC",
                args,
            ).fetchall()
        return [WorkLink.model_validate_json(row[0]) for row in rows]
