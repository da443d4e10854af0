"""The embedded failure store: one SQLite file (`failures.sqlite3` in the home), looked up by signature."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from episodic.failures.models import FailureFix
from episodic.failures.port import FailureStore
from episodic.plumbing.sqlite_conn import TenantTableFile, transaction

FAILURES_FILE = "failures.sqlite3"  # beside the card index in the home folder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS failure_fixes (
  record_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, key TEXT NOT NULL,
  failed_at REAL NOT NULL, passed_at REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS failure_by_key ON failure_fixes (tenant_id, key, passed_at);
CREATE INDEX IF NOT EXISTS failure_by_session ON failure_fixes (tenant_id, session_id);
"""


class SQLiteFailureStore(TenantTableFile, FailureStore):
    table = "failure_fixes"

    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(path, _SCHEMA, busy_timeout_ms)

    def _replace_session(self, tenant_id: str, session_id: str, fixes: Sequence[FailureFix]) -> int:
        rows = [
            (f.record_id, tenant_id, session_id, f.key, f.failed_at.timestamp(), f.passed_at.timestamp(),
             f.model_dump_json())
            for f in fixes
        ]  # fmt: skip
        with transaction(self._conn, self._lock) as conn:
            conn.execute(
                "DELETE FROM failure_fixes WHERE tenant_id = ? AND session_id = ?", (tenant_id, session_id)
            )
            conn.executemany("INSERT OR REPLACE INTO failure_fixes VALUES (?,?,?,?,?,?,?)", rows)
        return len(rows)

    def _by_key(self, tenant_id: str, key: str, before: datetime | None, limit: int) -> list[FailureFix]:
        latest = before.timestamp() if before is not None else float("inf")
        with self._lock:
            rows = self._conn.execute(
                "SELECT body FROM failure_fixes WHERE tenant_id = ? AND key = ? AND failed_at < ? "
                "ORDER BY passed_at DESC LIMIT ?",
                (tenant_id, key, latest, limit),
            ).fetchall()
        return [FailureFix.model_validate(json.loads(row[0])) for row in rows]
