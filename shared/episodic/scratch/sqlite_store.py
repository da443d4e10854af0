"""The embedded scratch store: one SQLite file (`scratch.sqlite3` in the home), vectors + a TTL column.

Exact cosine over the tenant's unexpired rows (a scratch memory holds days of outcomes, not years), one
connection shared by the server's threads under a lock, WAL for a reader beside the indexer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from episodic.plumbing.sqlite_conn import TenantTableFile, transaction
from episodic.scratch.models import ScratchHit, ScratchRecord, ToolOutcome
from episodic.scratch.port import ScratchManifest, ScratchStore

SCRATCH_FILE = "scratch.sqlite3"  # beside the card index in the home folder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scratch_manifest (
  id INTEGER PRIMARY KEY CHECK (id = 1), embedder_id TEXT NOT NULL, dimension INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS scratch_records (
  record_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, tool_name TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'fail')), summary TEXT NOT NULL,
  created_at REAL NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS scratch_by_tenant_time ON scratch_records (tenant_id, created_at);
CREATE INDEX IF NOT EXISTS scratch_by_session ON scratch_records (tenant_id, session_id);
CREATE INDEX IF NOT EXISTS scratch_by_time ON scratch_records (created_at);
"""


def _epoch(value: datetime) -> float:
    return value.timestamp()


class SQLiteScratchStore(TenantTableFile, ScratchStore):
    table = "scratch_records"

    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(path, _SCHEMA, busy_timeout_ms)
        self._manifest: ScratchManifest | None = None

    @property
    def index_name(self) -> str:
        return str(self.path)

    def _stored_manifest(self) -> ScratchManifest | None:
        if self._manifest is None:
            with self._lock:
                row = self._conn.execute("SELECT embedder_id, dimension FROM scratch_manifest").fetchone()
            if row is not None:
                self._manifest = ScratchManifest(embedder_id=row[0], dimension=int(row[1]))
        return self._manifest

    def _record_manifest(self, manifest: ScratchManifest) -> ScratchManifest:
        if self._manifest is not None:
            return self._manifest
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO scratch_manifest (id, embedder_id, dimension) VALUES (1, ?, ?)",
                (manifest.embedder_id, manifest.dimension),
            )
            row = self._conn.execute("SELECT embedder_id, dimension FROM scratch_manifest").fetchone()
        self._manifest = ScratchManifest(embedder_id=row[0], dimension=int(row[1]))
        return self._manifest

    def _write(self, records: Sequence[ScratchRecord], vectors: np.ndarray) -> int:
        rows = [
            (
                r.record_id,
                r.tenant_id,
                r.session_id,
                r.tool_name,
                r.outcome.value,
                r.summary,
                _epoch(r.created_at),
                vectors[i].astype(np.float32).tobytes(),
            )
            for i, r in enumerate(records)
        ]
        with self._lock:
            before = self._conn.total_changes
            with transaction(self._conn, self._lock) as conn:
                conn.executemany("INSERT OR IGNORE INTO scratch_records VALUES (?,?,?,?,?,?,?,?)", rows)
            return self._conn.total_changes - before

    def _nearest(self, tenant_id: str, vector: np.ndarray, k: int, not_before: datetime) -> list[ScratchHit]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, tool_name, outcome, summary, created_at, vector FROM scratch_records "
                "WHERE tenant_id = ? AND created_at >= ?",
                (tenant_id, _epoch(not_before)),
            ).fetchall()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(row[5] for row in rows), dtype=np.float32).reshape(len(rows), -1)
        cosines = matrix @ vector
        order = np.argsort(-cosines, kind="stable")[:k]
        return [
            ScratchHit(
                record=ScratchRecord(
                    tenant_id=tenant_id,
                    session_id=rows[i][0],
                    tool_name=rows[i][1],
                    outcome=ToolOutcome(rows[i][2]),
                    summary=rows[i][3],
                    created_at=datetime.fromtimestamp(rows[i][4], UTC),
                ),
                similarity=float(cosines[i]),
            )
            for i in order
        ]

    def known_ids(self, tenant_id: str, record_ids: Sequence[str]) -> set[str]:
        if not record_ids:
            return set()
        marks = ",".join("?" * len(record_ids))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT record_id FROM scratch_records WHERE tenant_id = ? AND record_id IN ({marks})",
                (tenant_id, *record_ids),
            ).fetchall()
        return {row[0] for row in rows}

    def sweep(self, before: datetime, after: datetime | None = None) -> int:
        latest = _epoch(after) if after is not None else float("inf")
        with self._lock:
            return self._conn.execute(
                "DELETE FROM scratch_records WHERE created_at < ? OR created_at > ?", (_epoch(before), latest)
            ).rowcount
