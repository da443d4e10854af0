"""The SQLite index's schema and its migrations (version N+1 = MIGRATIONS[N] applied to version N)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from episodic.kernel.errors import ConfigError

_V1 = (
    "CREATE TABLE manifest (id INTEGER PRIMARY KEY CHECK (id = 1), embedder_id TEXT NOT NULL, "
    "dimension INTEGER NOT NULL, renderings TEXT NOT NULL, card_schema_version INTEGER NOT NULL, "
    "created_at TEXT NOT NULL)",
    # id (= rowid) is the join key to the FTS table, the vectors and the in-memory matrix
    "CREATE TABLE cards (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, record TEXT NOT NULL, "
    "outcome TEXT NOT NULL, project TEXT NOT NULL, started_at TEXT, started_ts REAL, tags TEXT NOT NULL, "
    "source_sha256 TEXT NOT NULL, distiller TEXT NOT NULL, card_schema_version INTEGER NOT NULL, "
    "indexed_at TEXT NOT NULL, UNIQUE (tenant_id, session_id))",
    # a rowid table: WITHOUT ROWID would push every 1.5 KB vector to its own overflow page (3x the size)
    "CREATE TABLE vectors (id INTEGER PRIMARY KEY, card_id INTEGER NOT NULL REFERENCES cards(id) "
    "ON DELETE CASCADE, rendering TEXT NOT NULL, vector BLOB NOT NULL, UNIQUE (card_id, rendering))",
    # no stemming: the keyword half is for exact terms (error codes, tool names); vectors do the fuzzy part
    "CREATE VIRTUAL TABLE cards_fts USING fts5(tenant_id UNINDEXED, body, tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE cards_vocab USING fts5vocab(cards_fts, 'row')",  # document counts per term
    # bumped by every write of a tenant: readers in other processes see their cached matrix is stale
    "CREATE TABLE generations (tenant_id TEXT PRIMARY KEY, generation INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE failures (tenant_id TEXT NOT NULL, session_key TEXT NOT NULL, path TEXT NOT NULL, "
    "source_sha256 TEXT NOT NULL, reason TEXT NOT NULL, attempts INTEGER NOT NULL, "
    "last_attempt_at TEXT NOT NULL, PRIMARY KEY (tenant_id, session_key)) WITHOUT ROWID",
)


def _statements(statements: tuple[str, ...]) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return apply


# Append only: a released migration never changes. Each runs in the same transaction as its version bump.
# v2: the coding agent that wrote each session (cards indexed before it were all Claude Code's)
_V2 = ("ALTER TABLE cards ADD COLUMN agent TEXT NOT NULL DEFAULT 'claude-code'",)
# v3: a person's review of the card (episodic.cards.review): 'vetoed' rows leave the query pool
_V3 = ("ALTER TABLE cards ADD COLUMN review TEXT NOT NULL DEFAULT 'unreviewed'",)
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _statements(_V1),
    _statements(_V2),
    _statements(_V3),
]
SCHEMA_VERSION = len(MIGRATIONS)


def current_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, path: object) -> int:
    """Bring the database to SCHEMA_VERSION; safe when several processes open a new file at once."""
    if current_version(conn) == SCHEMA_VERSION:
        return SCHEMA_VERSION
    conn.execute("BEGIN IMMEDIATE")  # the write lock: the version read below cannot race another migrator
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        version = current_version(conn)
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"index {path} has schema version {version}, newer than this episodic understands "
                f"({SCHEMA_VERSION}); upgrade episodic"
            )
        if version == 0:
            conn.execute("INSERT INTO schema_version (version) VALUES (0)")
        for target in range(version, SCHEMA_VERSION):
            MIGRATIONS[target](conn)
            conn.execute("UPDATE schema_version SET version = ?", (target + 1,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION
