"""The embedded injection store: one SQLite file (`injections.sqlite3` in the home), one row a record."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from episodic.kernel.injection_port import CardUse, InjectionRecord, InjectionStore, Use
from episodic.plumbing.sqlite_conn import TenantTableFile, transaction

INJECTIONS_FILE = "injections.sqlite3"  # beside the card index in the home folder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS injections (
  record_id TEXT NOT NULL, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, card_id TEXT NOT NULL,
  at REAL NOT NULL, use TEXT, body TEXT NOT NULL, PRIMARY KEY (tenant_id, record_id));
CREATE INDEX IF NOT EXISTS injections_by_session ON injections (tenant_id, session_id, at);
CREATE INDEX IF NOT EXISTS injections_by_time ON injections (tenant_id, at);
CREATE INDEX IF NOT EXISTS injections_by_card ON injections (tenant_id, card_id);
"""


class SQLiteInjectionStore(TenantTableFile, InjectionStore):
    table = "injections"

    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(path, _SCHEMA, busy_timeout_ms)

    def _add(self, tenant_id: str, records: Sequence[InjectionRecord]) -> int:
        rows = [
            (r.record_id, tenant_id, r.session_id, r.card_id, r.at.timestamp(), r.use, r.model_dump_json())
            for r in records
        ]
        with transaction(self._conn, self._lock) as conn:
            conn.executemany("INSERT OR IGNORE INTO injections VALUES (?,?,?,?,?,?,?)", rows)
        return len(rows)

    def _rows(self, sql: str, params: tuple[object, ...]) -> list[InjectionRecord]:
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [InjectionRecord.model_validate(json.loads(row[0])) for row in rows]

    def _of_session(self, tenant_id: str, session_id: str) -> list[InjectionRecord]:
        return self._rows(
            "SELECT body FROM injections WHERE tenant_id = ? AND session_id = ? ORDER BY at",
            (tenant_id, session_id),
        )

    def _since(self, tenant_id: str, since: datetime | None, limit: int) -> list[InjectionRecord]:
        start = since.timestamp() if since is not None else float("-inf")
        return self._rows(
            "SELECT body FROM injections WHERE tenant_id = ? AND at >= ? ORDER BY at DESC LIMIT ?",
            (tenant_id, start, limit),
        )

    def _set_uses(self, tenant_id: str, session_id: str, uses: Mapping[str, tuple[Use, str, str]]) -> int:
        updated = 0
        with transaction(self._conn, self._lock) as conn:
            rows = conn.execute(
                "SELECT record_id, body FROM injections WHERE tenant_id = ? AND session_id = ?",
                (tenant_id, session_id),
            ).fetchall()
            for record_id, body in rows:
                if record_id not in uses:
                    continue
                use, detail, agent = uses[record_id]
                record = InjectionRecord.model_validate(json.loads(body))
                record = record.model_copy(update={"use": use, "use_detail": detail, "agent": agent})
                conn.execute(
                    "UPDATE injections SET use = ?, body = ? WHERE tenant_id = ? AND record_id = ?",
                    (use, record.model_dump_json(), tenant_id, record_id),
                )
                updated += 1
        return updated

    def uses_of_cards(self, tenant_id: str, card_ids: Sequence[str]) -> dict[str, CardUse]:
        from episodic.kernel.models import check_tenant

        tenant = check_tenant(tenant_id)
        wanted = sorted(set(card_ids))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._conn.execute(
                "SELECT card_id, count(*), sum(json_extract(body, '$.tier') = 'pointer'), "
                "sum(use IN ('opened','cited','acted')), sum(use = 'opened'), sum(use IS NOT NULL) "
                f"FROM injections WHERE tenant_id = ? AND card_id IN ({marks}) GROUP BY card_id",
                (tenant, *wanted),
            ).fetchall()
        return {row[0]: CardUse(*(int(v or 0) for v in row[1:])) for row in rows}

    def expire(self, older_than: datetime, keep_per_tenant: int) -> int:
        with transaction(self._conn, self._lock) as conn:
            gone = conn.execute("DELETE FROM injections WHERE at < ?", (older_than.timestamp(),)).rowcount
            tenants = conn.execute(
                "SELECT tenant_id FROM injections GROUP BY tenant_id HAVING count(*) > ?", (keep_per_tenant,)
            ).fetchall()
            for (tenant,) in tenants:
                gone += conn.execute(
                    "DELETE FROM injections WHERE tenant_id = ? AND record_id NOT IN (SELECT record_id FROM "
                    "injections WHERE tenant_id = ? ORDER BY at DESC LIMIT ?)",
                    (tenant, tenant, keep_per_tenant),
                ).rowcount
        return gone
