"""The embedded index: one SQLite file holding cards, per-rendering vectors and an FTS5 keyword index.

Safe for one writer and many readers across processes (WAL, busy_timeout): the MCP server reads while
`index` writes. Vector search is exact cosine over an in-memory float32 matrix per tenant, rebuilt when
that tenant's write generation moves; the keyword half is BM25 over `render.keyword_text(card)` (FTS5) with
the tenant's own statistics (`store.keywords`); the halves are fused by score (`episodic.store.hybrid`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from episodic.kernel.models import (
    DEFAULT_KEYWORD_WEIGHT,
    DEFAULT_RENDERING_WEIGHTS,
    CardRecord,
    IndexManifest,
    SearchFilters,
)
from episodic.kernel.ports import IngestFailure, IngestLedger, ReviewableStore
from episodic.plumbing.sqlite_conn import open_connection, transaction
from episodic.store import hybrid
from episodic.store.base import CandidateQuery, Candidates, RuleEnforcingStore
from episodic.store.keywords import TenantKeywords, fold
from episodic.store.matrix import TenantMatrix, normalise_tags, timestamp
from episodic.store.parity import require_tenant
from episodic.store.render import keyword_text
from episodic.store.schema import migrate

_PAGE = 500


def _now() -> str:
    return datetime.now(UTC).isoformat()


class SQLiteStore(RuleEnforcingStore, IngestLedger, ReviewableStore):
    def __init__(
        self,
        path: Path | str,
        *,
        keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
        rendering_weights: Mapping[str, float] | None = None,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        if keyword_weight < 0:
            raise ValueError(f"keyword_weight must be >= 0, got {keyword_weight}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keyword_weight = keyword_weight
        self.rendering_weights = dict(
            DEFAULT_RENDERING_WEIGHTS if rendering_weights is None else rendering_weights
        )
        self._lock = threading.RLock()  # one connection, shared by the server's threads
        # page_size counts for new files only (five vectors a page), and must come before WAL
        self._conn = open_connection(self.path, busy_timeout_ms, before_wal=["PRAGMA page_size=8192"])
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.schema_version = migrate(self._conn, self.path)
        self._manifest: IndexManifest | None = None
        self._matrices: dict[str, TenantMatrix] = {}
        self._keyword_indexes: dict[str, tuple[int, TenantKeywords]] = {}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self, write: bool) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn, self._lock, write=write)

    # ------------------------------------------------------------------ manifest (embedding parity)

    def _read_manifest(self, conn: sqlite3.Connection) -> IndexManifest | None:
        if self._manifest is None:  # written once, only ever extended by this process: cache it when seen
            row = conn.execute(
                "SELECT embedder_id, dimension, renderings, card_schema_version FROM manifest"
            ).fetchone()
            if row:
                self._manifest = IndexManifest(
                    embedder_id=row[0],
                    dimension=row[1],
                    renderings=json.loads(row[2]),
                    card_schema_version=row[3],
                )
        return self._manifest

    @property
    def index_name(self) -> str:
        return str(self.path)

    def _record_manifest(self, manifest: IndexManifest) -> IndexManifest:
        with self._transaction(write=True) as conn:
            stored = self._read_manifest(conn)
            if stored is None:
                conn.execute(
                    "INSERT OR IGNORE INTO manifest (id, embedder_id, dimension, renderings, "
                    "card_schema_version, created_at) VALUES (1, ?, ?, ?, ?, ?)",
                    (
                        manifest.embedder_id,
                        manifest.dimension,
                        json.dumps(manifest.renderings),
                        manifest.card_schema_version,
                        _now(),
                    ),
                )
                stored = self._read_manifest(conn)
        assert stored is not None
        return stored

    def _extend_manifest(self, manifest: IndexManifest) -> IndexManifest:
        with self._transaction(write=True) as conn:
            self._manifest = None  # another process may have extended it first: read it in this transaction
            stored = self._read_manifest(conn)
            assert stored is not None
            added = [r for r in manifest.renderings if r not in stored.renderings]
            if added:
                renderings = [*stored.renderings, *added]
                conn.execute("UPDATE manifest SET renderings = ? WHERE id = 1", (json.dumps(renderings),))
                self._manifest = stored.model_copy(update={"renderings": renderings})
        assert self._manifest is not None
        return self._manifest

    def manifest(self) -> IndexManifest | None:
        with self._lock:
            return self._read_manifest(self._conn)

    # ------------------------------------------------------------------ writes

    def _write(self, record: CardRecord, vectors: list[tuple[str, np.ndarray]]) -> None:
        tenant = record.tenant_id
        blobs = [(rendering, vector.tobytes()) for rendering, vector in vectors]
        if record.indexed_at is None:
            record = record.model_copy(update={"indexed_at": datetime.now(UTC)})
        card = record.card
        values = (
            record.model_dump_json(),
            card.outcome.value,
            record.project,
            record.started_at.isoformat() if record.started_at else None,
            timestamp(record.started_at),
            json.dumps(sorted(normalise_tags(card.tags))),
            record.source_sha256,
            record.distiller.id,
            record.card_schema_version,
            record.indexed_at.isoformat() if record.indexed_at else _now(),
            record.agent,
        )
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT rowid FROM cards WHERE tenant_id = ? AND session_id = ?", (tenant, record.session_id)
            ).fetchone()
            columns = (
                "record = ?, outcome = ?, project = ?, started_at = ?, started_ts = ?, tags = ?, "
                "source_sha256 = ?, distiller = ?, card_schema_version = ?, indexed_at = ?, agent = ?"
            )
            if row:
                rowid = int(row[0])
                conn.execute("DELETE FROM cards_fts WHERE rowid = ?", (rowid,))
                conn.execute("DELETE FROM vectors WHERE card_id = ?", (rowid,))
                conn.execute(f"UPDATE cards SET {columns} WHERE rowid = ?", (*values, rowid))
            else:
                cursor = conn.execute(
                    "INSERT INTO cards (tenant_id, session_id, record, outcome, project, started_at, started_ts, "
                    "tags, source_sha256, distiller, card_schema_version, indexed_at, agent) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (tenant, record.session_id, *values),
                )
                rowid = int(cursor.lastrowid or 0)
            conn.execute(
                "INSERT INTO cards_fts (rowid, tenant_id, body) VALUES (?, ?, ?)",
                (rowid, tenant, keyword_text(card)),
            )
            conn.executemany(
                "INSERT INTO vectors (card_id, rendering, vector) VALUES (?, ?, ?)",
                [(rowid, rendering, blob) for rendering, blob in blobs],
            )
            conn.execute("UPDATE cards SET review = ? WHERE rowid = ?", (record.review_state.value, rowid))
            self._bump(conn, tenant)

    def _bump(self, conn: sqlite3.Connection, tenant: str) -> None:
        conn.execute(
            "INSERT INTO generations (tenant_id, generation) VALUES (?, 1) "
            "ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1",
            (tenant,),
        )
        self._matrices.pop(tenant, None)

    def delete(self, tenant_id: str, session_id: str) -> bool:
        tenant = require_tenant(tenant_id)
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT rowid FROM cards WHERE tenant_id = ? AND session_id = ?", (tenant, session_id)
            ).fetchone()
            if not row:
                return False
            conn.execute("DELETE FROM cards_fts WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM vectors WHERE card_id = ?", (row[0],))
            conn.execute("DELETE FROM cards WHERE rowid = ?", (row[0],))
            self._bump(conn, tenant)
            return True

    # ------------------------------------------------------------------ reads

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        tenant = require_tenant(tenant_id)
        with self._lock:
            row = self._conn.execute(
                "SELECT record FROM cards WHERE tenant_id = ? AND session_id = ?", (tenant, session_id)
            ).fetchone()
        return CardRecord.model_validate_json(row[0]) if row else None

    def session_ids_starting(self, tenant_id: str, prefix: str, limit: int = 10) -> list[str]:
        tenant = require_tenant(tenant_id)
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id FROM cards WHERE tenant_id = ? AND session_id LIKE ? ESCAPE '\\' "
                "ORDER BY session_id LIMIT ?",
                (tenant, escaped + "%", limit),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def iter_records(self, tenant_id: str | None = None) -> Iterator[CardRecord]:
        last = 0
        while True:  # paged by rowid, so a caller may write between pages without a held cursor
            with self._lock:
                if tenant_id is None:
                    rows = self._conn.execute(
                        "SELECT rowid, record FROM cards WHERE rowid > ? ORDER BY rowid LIMIT ?",
                        (last, _PAGE),
                    ).fetchall()
                else:
                    rows = self._conn.execute(
                        "SELECT rowid, record FROM cards WHERE tenant_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
                        (require_tenant(tenant_id), last, _PAGE),
                    ).fetchall()
            if not rows:
                return
            for rowid, record in rows:
                last = rowid
                yield CardRecord.model_validate_json(record)

    def count(self, tenant_id: str | None = None) -> int:
        with self._lock:
            if tenant_id is None:
                row = self._conn.execute("SELECT COUNT(*) FROM cards").fetchone()
            else:
                row = self._conn.execute(
                    "SELECT COUNT(*) FROM cards WHERE tenant_id = ?", (require_tenant(tenant_id),)
                ).fetchone()
        return int(row[0])

    def _matrix(self, conn: sqlite3.Connection, tenant: str, dimension: int) -> TenantMatrix:
        row = conn.execute("SELECT generation FROM generations WHERE tenant_id = ?", (tenant,)).fetchone()
        generation = int(row[0]) if row else 0
        cached = self._matrices.get(tenant)
        if cached is not None and cached.generation == generation:
            return cached
        rows = conn.execute(
            "SELECT c.rowid, c.outcome, c.project, c.started_ts, c.tags, v.rendering, v.vector, c.agent "
            "FROM cards c JOIN vectors v ON v.card_id = c.rowid WHERE c.tenant_id = ? AND c.review != 'vetoed' "
            "ORDER BY c.rowid, v.rendering",
            (tenant,),
        )
        matrix = TenantMatrix.build(generation, dimension, rows)
        self._matrices[tenant] = matrix
        return matrix

    def _keywords(self, conn: sqlite3.Connection, tenant: str, matrix: TenantMatrix) -> TenantKeywords:
        """The tenant's keyword index, rebuilt when its write generation moves (as its matrix is)."""
        cached = self._keyword_indexes.get(tenant)
        if cached is not None and cached[0] == matrix.generation:
            return cached[1]
        rows = conn.execute("SELECT rowid, body FROM cards_fts WHERE tenant_id = ?", (tenant,))
        bodies = ((matrix.index_of[r], body) for r, body in rows if r in matrix.index_of)
        built = TenantKeywords.build(bodies, len(matrix))
        self._keyword_indexes[tenant] = (matrix.generation, built)
        return built

    def _keyword_scores(
        self, conn: sqlite3.Connection, tenant: str, matrix: TenantMatrix, text: str
    ) -> np.ndarray | None:
        """(S,) BM25 of each of the tenant's sessions for the query (higher is better), None without terms.

        Statistics are the tenant's own (`store.keywords`): no other tenant's writes move this ranking."""
        terms = list(dict.fromkeys(fold(t) for t in hybrid.query_terms(text)))
        if not terms or not len(matrix):
            return None
        keywords = self._keywords(conn, tenant, matrix)
        selected = hybrid.selective_terms(terms, keywords.doc_counts(terms), keywords.sessions)
        return keywords.scores(selected) if selected else None

    @staticmethod
    def _best_keyword(scores: np.ndarray, allowed: np.ndarray, rowids: np.ndarray, limit: int) -> np.ndarray:
        """Indices of the best `limit` allowed matches, best first (ties by rowid)."""
        found = np.flatnonzero((scores > 0) & allowed)
        return found[np.lexsort((rowids[found], -scores[found]))][:limit]

    def _keyword_ranked(
        self, conn: sqlite3.Connection, tenant: str, text: str, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, BM25) of the tenant's best keyword matches that the filters admit (the keyword half alone)."""
        stored = self._read_manifest(conn)
        if stored is None:
            return []
        matrix = self._matrix(conn, tenant, stored.dimension)
        scores = self._keyword_scores(conn, tenant, matrix, text)
        if scores is None:
            return []
        order = self._best_keyword(
            scores, self._admitted(conn, tenant, matrix, filters), matrix.rowids, limit
        )
        return [(int(matrix.rowids[i]), float(scores[i])) for i in order]

    @contextmanager
    def _snapshot(self) -> Iterator[dict[str, object]]:
        with self._transaction(write=False) as conn:  # one snapshot for both halves and the records
            yield {"conn": conn}

    def _candidates(self, handle: dict[str, object], request: CandidateQuery) -> Candidates:
        tenant_id, query, query_text, k, filters = (
            request.tenant_id,
            request.vector,
            request.text,
            request.k,
            request.filters,
        )
        conn = handle["conn"]
        assert isinstance(conn, sqlite3.Connection)
        matrix = handle["matrix"] = self._matrix(conn, tenant_id, request.stored.dimension)
        names, weights = self.voting(matrix.renderings, filters)
        if not len(matrix) or not names:
            return Candidates()
        # the pool is every session the filters admit: the vector half is standardised over all of them
        allowed = self._admitted(conn, tenant_id, matrix, filters)
        pool = np.flatnonzero(allowed)
        position = np.full(len(matrix), -1, dtype=np.int64)
        position[pool] = np.arange(len(pool))
        depth = max(hybrid.CANDIDATES, k)  # an evaluation may ask for every session
        keyword: list[tuple[int, float]] = []
        scores = self._keyword_scores(conn, tenant_id, matrix, query_text)
        if scores is not None:  # session index -> pool position: every allowed match is in the pool
            best = self._best_keyword(scores, allowed, matrix.rowids, depth)
            keyword = [(int(position[i]), float(scores[i])) for i in best]
        cosines = matrix.per_rendering(query, names)[:, pool]  # only the voting renderings are scored
        return Candidates(
            keys=pool.tolist(), cosines=cosines, renderings=names, weights=weights, keyword=keyword
        )

    def _resolve(
        self, handle: dict[str, object], tenant_id: str, keys: Sequence[int], query: np.ndarray
    ) -> dict[int, CardRecord]:
        conn, matrix = handle["conn"], handle["matrix"]
        assert isinstance(conn, sqlite3.Connection) and isinstance(matrix, TenantMatrix)
        rowids = {int(matrix.rowids[key]): key for key in keys}
        marks = ",".join("?" * len(rowids))
        rows = conn.execute(f"SELECT rowid, record FROM cards WHERE rowid IN ({marks})", list(rowids))
        return {rowids[rowid]: CardRecord.model_validate_json(raw) for rowid, raw in rows.fetchall()}

    def _excluded_keys(
        self, handle: dict[str, object], tenant_id: str, keys: Sequence[int], session_ids: set[str]
    ) -> set[int]:
        conn, matrix = handle["conn"], handle["matrix"]
        assert isinstance(conn, sqlite3.Connection) and isinstance(matrix, TenantMatrix)
        marks = ",".join("?" * len(session_ids))
        sql = f"SELECT rowid FROM cards WHERE tenant_id = ? AND session_id IN ({marks})"
        rows = conn.execute(sql, [tenant_id, *sorted(session_ids)])
        return {matrix.index_of[rowid] for (rowid,) in rows if rowid in matrix.index_of} & set(keys)

    # ------------------------------------------------------------------ review state (episodic.cards.review)

    def _admitted(
        self, conn: sqlite3.Connection, tenant: str, matrix: TenantMatrix, filters: SearchFilters
    ) -> np.ndarray:
        """The matrix's filter mask, narrowed to approved cards when asked (vetoed ones are never in it)."""
        allowed = matrix.allowed(filters)
        if filters.approved_only and len(matrix):
            approved = np.zeros(len(matrix), dtype=bool)
            rows = conn.execute(
                "SELECT rowid FROM cards WHERE tenant_id = ? AND review = 'approved'", (tenant,)
            )
            approved[[matrix.index_of[r] for (r,) in rows if r in matrix.index_of]] = True
            allowed &= approved
        return allowed

    def rewrite_record(self, record: CardRecord) -> None:
        tenant = require_tenant(record.tenant_id)
        with self._transaction(write=True) as conn:
            updated = conn.execute(
                "UPDATE cards SET record = ?, review = ? WHERE tenant_id = ? AND session_id = ?",
                (record.model_dump_json(), record.review_state.value, tenant, record.session_id),
            ).rowcount
            if updated:
                self._bump(conn, tenant)  # the query pool changes when a card is vetoed or restored

    # ------------------------------------------------------------------ ingest ledger

    def record_failure(self, failure: IngestFailure) -> None:
        tenant = require_tenant(failure.tenant_id)
        with self._transaction(write=True) as conn:
            conn.execute(
                "INSERT INTO failures (tenant_id, session_key, path, source_sha256, reason, attempts, "
                "last_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, session_key) DO UPDATE SET "
                "path = excluded.path, source_sha256 = excluded.source_sha256, reason = excluded.reason, "
                "attempts = failures.attempts + 1, last_attempt_at = excluded.last_attempt_at",
                (
                    tenant,
                    failure.session_key,
                    failure.path,
                    failure.source_sha256,
                    failure.reason,
                    max(1, failure.attempts),
                    failure.last_attempt_at or _now(),
                ),
            )

    def clear_failure(self, tenant_id: str, session_key: str) -> None:
        tenant = require_tenant(tenant_id)
        with self._transaction(write=True) as conn:
            conn.execute(
                "DELETE FROM failures WHERE tenant_id = ? AND session_key = ?", (tenant, session_key)
            )

    def failures(self, tenant_id: str | None = None) -> list[IngestFailure]:
        sql = "SELECT tenant_id, session_key, path, source_sha256, reason, attempts, last_attempt_at FROM failures"
        with self._lock:
            if tenant_id is None:
                rows = self._conn.execute(f"{sql} ORDER BY tenant_id, session_key").fetchall()
            else:
                rows = self._conn.execute(
                    f"{sql} WHERE tenant_id = ? ORDER BY session_key", (require_tenant(tenant_id),)
                ).fetchall()
        return [IngestFailure(*row) for row in rows]
