"""The embedded index: one SQLite file holding cards, per-rendering vectors and an FTS5 keyword index.

Safe for one writer and many readers across processes (WAL, busy_timeout): the MCP server reads while
`index` writes. Vector search is exact cosine over an in-memory float32 matrix per tenant, rebuilt when
that tenant's write generation moves, ranked once per rendering; the keyword half is BM25 over
`render.keyword_text(card)` (FTS5 finds; the tenant's own statistics rank, see `tenant_bm25`); the
rankings are fused by reciprocal-rank fusion (see `episodic.store.hybrid` for the weights and the
threshold rule).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Container, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from episodic.errors import ParityError
from episodic.models import (
    CardRecord,
    IndexManifest,
    Outcome,
    SearchFilters,
    SearchHit,
)
from episodic.ports import IngestFailure, IngestLedger, StoredVector, VectorStore
from episodic.render import keyword_text
from episodic.store import hybrid, tenant_bm25
from episodic.store.matrix import TenantMatrix, normalise_tags, timestamp
from episodic.store.parity import check_parity, check_vector, require_tenant
from episodic.store.schema import migrate

CANDIDATES = 50  # per half, before fusion: far more than k (<= 5), few enough to stay fast
_PAGE = 500


def _top(scores: np.ndarray, allowed: np.ndarray, depth: int) -> list[int]:
    """The `depth` best of the allowed sessions that have a score (not -inf), best first."""
    allowed = allowed[np.isfinite(scores[allowed])]
    if len(allowed) > depth:
        allowed = allowed[np.argpartition(-scores[allowed], depth - 1)[:depth]]
    return [int(i) for i in allowed[np.argsort(-scores[allowed], kind="stable")]]


def _now() -> str:
    return datetime.now(UTC).isoformat()


class SQLiteStore(VectorStore, IngestLedger):
    def __init__(
        self, path: Path | str, *, keyword_weight: float = 0.5, busy_timeout_ms: int = 10_000
    ) -> None:
        if keyword_weight < 0:
            raise ValueError(f"keyword_weight must be >= 0, got {keyword_weight}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keyword_weight = keyword_weight
        self._lock = threading.RLock()  # one connection, shared by the server's threads
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        self._conn.execute("PRAGMA page_size=8192")  # new files only: packs five vectors a page
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.schema_version = migrate(self._conn, self.path)
        self._manifest: IndexManifest | None = None
        self._matrices: dict[str, TenantMatrix] = {}
        self._lengths: dict[str, tenant_bm25.TenantLengths] = {}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------------ manifest (embedding parity)

    def _read_manifest(self, conn: sqlite3.Connection) -> IndexManifest | None:
        if self._manifest is None:  # written once, never changed: cache it when seen
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

    def _ensure_manifest(self, conn: sqlite3.Connection, manifest: IndexManifest) -> None:
        stored = self._read_manifest(conn)
        if stored is None:
            conn.execute(
                "INSERT OR IGNORE INTO manifest (id, embedder_id, dimension, renderings, card_schema_version, "
                "created_at) VALUES (1, ?, ?, ?, ?, ?)",
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
        check_parity(stored, manifest, str(self.path), "write to")

    def ensure_manifest(self, manifest: IndexManifest) -> None:
        with self._transaction(write=True) as conn:
            self._ensure_manifest(conn, manifest)

    def manifest(self) -> IndexManifest | None:
        with self._lock:
            return self._read_manifest(self._conn)

    # ------------------------------------------------------------------ writes

    def upsert(self, record: CardRecord, vectors: Sequence[StoredVector], manifest: IndexManifest) -> None:
        tenant = require_tenant(record.tenant_id)
        if not record.session_id:
            raise ValueError("a card record needs a session id")
        blobs = self._vector_rows(vectors, manifest)
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
        )
        with self._transaction(write=True) as conn:
            self._ensure_manifest(conn, manifest)
            row = conn.execute(
                "SELECT rowid FROM cards WHERE tenant_id = ? AND session_id = ?", (tenant, record.session_id)
            ).fetchone()
            columns = (
                "record = ?, outcome = ?, project = ?, started_at = ?, started_ts = ?, tags = ?, "
                "source_sha256 = ?, distiller = ?, card_schema_version = ?, indexed_at = ?"
            )
            if row:
                rowid = int(row[0])
                conn.execute("DELETE FROM cards_fts WHERE rowid = ?", (rowid,))
                conn.execute("DELETE FROM vectors WHERE card_id = ?", (rowid,))
                conn.execute(f"UPDATE cards SET {columns} WHERE rowid = ?", (*values, rowid))
            else:
                cursor = conn.execute(
                    "INSERT INTO cards (tenant_id, session_id, record, outcome, project, started_at, started_ts, "
                    "tags, source_sha256, distiller, card_schema_version, indexed_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            self._bump(conn, tenant)

    @staticmethod
    def _vector_rows(vectors: Sequence[StoredVector], manifest: IndexManifest) -> list[tuple[str, bytes]]:
        if not vectors:
            raise ValueError("a card needs at least one rendering vector")
        rows: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        for stored in vectors:
            if stored.rendering not in manifest.renderings:
                raise ParityError(
                    f"rendering {stored.rendering!r} is not one of the index's renderings {manifest.renderings}"
                )
            if stored.rendering in seen:
                raise ValueError(f"rendering {stored.rendering!r} given twice")
            seen.add(stored.rendering)
            vector = np.asarray(stored.vector, dtype=np.float32).reshape(-1)
            check_vector(vector.shape[0], manifest, f"the {stored.rendering} vector")
            norm = float(np.linalg.norm(vector))
            if not np.isfinite(norm) or norm == 0.0:
                raise ValueError(f"the {stored.rendering} vector is all-zero or not finite")
            rows.append((stored.rendering, (vector / norm).astype(np.float32).tobytes()))
        return rows

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
            "SELECT c.rowid, c.outcome, c.project, c.started_ts, c.tags, v.rendering, v.vector "
            "FROM cards c JOIN vectors v ON v.card_id = c.rowid WHERE c.tenant_id = ? "
            "ORDER BY c.rowid, v.rendering",
            (tenant,),
        )
        matrix = TenantMatrix.build(generation, dimension, rows)
        self._matrices[tenant] = matrix
        return matrix

    def _keyword_ranked(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        text: str,
        filters: SearchFilters,
        limit: int,
        tenant_rowids: Container[int] | None = None,
        tenant_cards: int | None = None,
    ) -> list[int]:
        terms = hybrid.query_terms(text)
        if not terms:
            return []
        if tenant_rowids is None or tenant_cards is None:  # no matrix at hand: the tenant's rows
            rows = conn.execute("SELECT rowid FROM cards WHERE tenant_id = ?", (tenant,))
            tenant_rowids = {int(r[0]) for r in rows}
            tenant_cards = len(tenant_rowids)
        doc_counts: dict[str, int] = {}
        for term in terms:  # one indexed lookup per term (fts5vocab does not plan IN lists)
            row = conn.execute("SELECT doc FROM cards_vocab WHERE term = ?", (term,)).fetchone()
            doc_counts[term] = int(row[0]) if row else 0
        total = int(conn.execute("SELECT COUNT(*) FROM cards").fetchone()[0])
        # FTS5's statistics cover every tenant: exact for a tenant alone in the index; otherwise every
        # statistic is recounted over this tenant's cards, so no other tenant's writes move its ranking
        alone = total == tenant_cards
        lengths = None
        if not alone:
            present = [t for t in terms if doc_counts[t]]
            doc_counts = tenant_bm25.tenant_doc_counts(conn, present, tenant_rowids)
            lengths = self._tenant_lengths(conn, tenant)
            total = lengths.docs
        selected = hybrid.selective_terms(terms, doc_counts, total)
        match = hybrid.fts_match(selected)
        if match is None:
            return []
        sql = [
            # without ORDER BY bm25 the planner may loop over cards and probe FTS per row: CROSS JOIN
            # keeps the FTS match as the outer loop (0.6 s -> ms at 10,000 cards)
            (
                "SELECT c.rowid FROM cards_fts f JOIN cards c ON c.rowid = f.rowid "
                if alone
                else "SELECT c.rowid FROM cards_fts f CROSS JOIN cards c ON c.rowid = f.rowid "
            )
            + "WHERE cards_fts MATCH ? AND f.tenant_id = ? AND c.tenant_id = ?"
        ]
        params: list[object] = [match, tenant, tenant]
        if not filters.include_unverified:
            sql.append("AND c.outcome = ?")
            params.append(Outcome.VERIFIED.value)
        if filters.project:
            sql.append("AND c.project = ?")
            params.append(filters.project)
        if filters.since is not None:
            sql.append("AND c.started_ts >= ?")
            params.append(timestamp(filters.since))
        wanted = sorted(normalise_tags(filters.tags))
        if wanted:
            marks = ",".join("?" * len(wanted))
            sql.append(f"AND EXISTS (SELECT 1 FROM json_each(c.tags) WHERE json_each.value IN ({marks}))")
            params.extend(wanted)
        if lengths is None:
            sql.append("ORDER BY bm25(cards_fts) LIMIT ?")
            params.append(limit)
            return [int(r[0]) for r in conn.execute(" ".join(sql), params)]
        candidates = [int(r[0]) for r in conn.execute(" ".join(sql), params)]
        return tenant_bm25.rank(conn, candidates, selected, doc_counts, lengths, limit)

    def _tenant_lengths(self, conn: sqlite3.Connection, tenant: str) -> tenant_bm25.TenantLengths:
        row = conn.execute("SELECT generation FROM generations WHERE tenant_id = ?", (tenant,)).fetchone()
        generation = int(row[0]) if row else 0
        cached = self._lengths.get(tenant)
        if cached is None or cached.generation != generation:
            cached = self._lengths[tenant] = tenant_bm25.tenant_lengths(conn, tenant, generation)
        return cached

    def query(
        self,
        tenant_id: str,
        query_vector: np.ndarray,
        query_text: str,
        k: int,
        filters: SearchFilters,
        manifest: IndexManifest,
        min_similarity: float,
    ) -> list[SearchHit]:
        tenant = require_tenant(tenant_id)
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        check_vector(query.shape[0], manifest, "the query vector")
        norm = float(np.linalg.norm(query))
        if not np.isfinite(norm) or norm == 0.0:
            raise ValueError("the query vector is all-zero or not finite")
        query = query / norm
        with self._transaction(write=False) as conn:  # one snapshot for both halves
            stored = self._read_manifest(conn)
            if stored is None:
                return []  # nothing was ever indexed
            check_parity(stored, manifest, str(self.path), "query")
            matrix = self._matrix(conn, tenant, stored.dimension)
            if not len(matrix):
                return []
            depth = max(CANDIDATES, k)  # an evaluation may ask for every session
            keyword_rowids = self._keyword_ranked(
                conn, tenant, query_text, filters, depth, matrix.index_of, len(matrix)
            )
            per_rendering = matrix.per_rendering(query)
            if filters.renderings:  # the configured query rendering(s) only
                chosen = [i for i, name in enumerate(matrix.renderings) if name in filters.renderings]
                per_rendering = per_rendering[chosen] if chosen else per_rendering[:0]
                if not chosen:
                    return []
            best = per_rendering.max(axis=0)  # every session has at least one rendering
            allowed = np.flatnonzero(matrix.allowed(filters))
            vector_rankings = [_top(cosines, allowed, depth) for cosines in per_rendering]
            keyword_ranked = [matrix.index_of[r] for r in keyword_rowids if r in matrix.index_of]
            candidates = set(keyword_ranked).union(*vector_rankings)
            similarity: dict[int, tuple[float, str | None]] = {i: (float(best[i]), None) for i in candidates}
            fused = hybrid.fuse(
                vector_rankings,
                keyword_ranked,
                similarity,
                k=k,
                min_similarity=min_similarity,
                keyword_weight=self.keyword_weight,
            )
            if not fused:
                return []
            rowids = [int(matrix.rowids[f.key]) for f in fused]
            marks = ",".join("?" * len(rowids))
            records = dict(
                conn.execute(f"SELECT rowid, record FROM cards WHERE rowid IN ({marks})", rowids).fetchall()
            )
        hits: list[SearchHit] = []
        for f, rowid in zip(fused, rowids, strict=True):
            record = CardRecord.model_validate_json(records[rowid])
            if record.tenant_id != tenant:  # defence in depth: never hand out another tenant's card
                continue
            hits.append(
                SearchHit(
                    record=record,
                    score=f.score,
                    similarity=f.similarity,
                    rendering=matrix.best_rendering(f.key, query),
                    keyword_rank=f.keyword_rank,
                )
            )
        return hits

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
