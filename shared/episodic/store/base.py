"""The store contract, enforced once (template method): every VectorStore built on `RuleEnforcingStore`
checks the tenant, the renderings, the vectors and embedding parity the same way, with the same error
types, and ranks with the one fusion and threshold rule (`hybrid.rank_pool`: z-scored blended cosine +
keyword score, keyword rescue included). Subclasses only move data: record the manifest, write a card's
unit vectors, and gather a candidate pool with its cosines and keyword scores.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from episodic.kernel.errors import InvalidArgumentError, ParityError
from episodic.kernel.models import (
    DEFAULT_KEYWORD_WEIGHT,
    DEFAULT_RENDERING_WEIGHTS,
    UNEMBEDDED_WHEN_UNUSED,
    CardRecord,
    IndexManifest,
    SearchFilters,
    SearchHit,
)
from episodic.kernel.ports import StoredVector, VectorStore
from episodic.store import hybrid
from episodic.store.parity import check_parity, extended, require_tenant


class InvalidStoreInputError(InvalidArgumentError, ValueError):
    """Input no store accepts (no session id, k < 1, duplicate or missing renderings)."""


class InvalidVectorError(InvalidStoreInputError):
    """A zero, NaN or Inf vector: cosine is undefined, so it is refused before it reaches any index."""


def unit_vector(vector: Any, manifest: IndexManifest, what: str) -> np.ndarray:
    """`vector` as unit float32 of the manifest's dimension; ParityError or InvalidVectorError otherwise."""
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape[0] != manifest.dimension:
        raise ParityError(
            f"{what} has dimension {array.shape[0]}, but the index holds {manifest.dimension}-d vectors "
            f"({manifest.embedder_id})"
        )
    if not np.all(np.isfinite(array)):
        raise InvalidVectorError(f"{what} contains NaN or Inf")
    norm = float(np.linalg.norm(array))
    if norm == 0.0:
        raise InvalidVectorError(f"{what} is all zeros (cosine is undefined)")
    return (array / norm).astype(np.float32)


@dataclass(frozen=True)
class CandidateQuery:
    """One checked query as a store's data access receives it (the vector is unit length)."""

    tenant_id: str
    vector: np.ndarray
    text: str
    k: int
    filters: SearchFilters
    stored: IndexManifest


@dataclass
class Candidates:
    """What a store's data access found for one query: a pool of sessions for the shared ranking rule.

    `keys` are the store's own ints, one per pool session; `cosines` is (len(renderings), len(keys)), the
    cosine of each pool session for each voting rendering (-inf where unknown); `keyword` is (pool
    position, BM25 relevance), best first. The vector half is standardised over this pool: SQLite's pool is
    every session the filters admit, S3 Vectors' the service's top-K (docs/retrieval.md)."""

    keys: list[int] = field(default_factory=list)
    cosines: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    renderings: list[str] = field(default_factory=list)
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    keyword: list[tuple[int, float]] = field(default_factory=list)
    keyword_half: bool = True  # False: this store ran no keyword search (its hits' keyword_score is unknown)


class RuleEnforcingStore(VectorStore):
    """Template methods over a store's data access: the rules live here, the I/O in the subclass."""

    keyword_weight: float = DEFAULT_KEYWORD_WEIGHT
    rendering_weights: dict[str, float] = DEFAULT_RENDERING_WEIGHTS

    def voting(self, available: Sequence[str], filters: SearchFilters) -> tuple[list[str], np.ndarray]:
        """The renderings a query is scored with and their weights: those named in the filters vote
        equally; otherwise the configured weights, zero-weight renderings not scored at all."""
        names = [r for r in available if not filters.renderings or r in filters.renderings]
        if not names:
            return [], np.zeros(0)
        weights = hybrid.rendering_weights(names, {} if filters.renderings else self.rendering_weights)
        keep = weights > 0
        return [n for n, voting in zip(names, keep, strict=True) if voting], weights[keep]

    # ------------------------------------------------------------ data access (subclasses)

    @property
    @abstractmethod
    def index_name(self) -> str:
        """How error messages name the index (a file path, a bucket/index)."""

    @abstractmethod
    def _record_manifest(self, manifest: IndexManifest) -> IndexManifest:
        """Store `manifest` when the index has none yet; return the stored one (never overwrite it)."""

    def _check_index(self, manifest: IndexManifest) -> None:
        """A backend's own parity check beyond the manifest (e.g. the index's declared dimension)."""

    @abstractmethod
    def _write(self, record: CardRecord, vectors: list[tuple[str, np.ndarray]]) -> None:
        """Replace the session's card and vectors with these checked unit vectors."""

    @contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """One consistent read for a whole query (SQLite: a read transaction); default: nothing."""
        yield None

    @abstractmethod
    def _candidates(self, handle: Any, query: CandidateQuery) -> Candidates:
        """The candidate pool (filters and tenant applied): its cosines and keyword scores (see Candidates)."""

    @abstractmethod
    def _resolve(
        self, handle: Any, tenant_id: str, keys: Sequence[int], query: np.ndarray
    ) -> dict[int, CardRecord]:
        """The records of the fused keys (their best rendering is the ranking rule's: store.hybrid)."""

    def _excluded_keys(
        self, handle: Any, tenant_id: str, keys: Sequence[int], session_ids: set[str]
    ) -> set[int]:
        """The pool keys whose session is one of `session_ids` (default: read their records; a store with a
        cheaper lookup overrides it)."""
        records = self._resolve(handle, tenant_id, keys, np.zeros(0, dtype=np.float32))
        return {key for key, record in records.items() if record.session_id in session_ids}

    # ------------------------------------------------------------ the rules (template methods)

    def _without_excluded(
        self, handle: Any, tenant_id: str, found: Candidates, filters: SearchFilters
    ) -> Candidates:
        """The pool without the sessions the filters exclude, so the fusion standardises over what is left."""
        wanted = {s for s in filters.exclude_sessions if s}
        if not wanted or not found.keys:
            return found
        dropped = self._excluded_keys(handle, tenant_id, found.keys, wanted)
        if not dropped:
            return found
        kept = [i for i, key in enumerate(found.keys) if key not in dropped]
        position = {old: new for new, old in enumerate(kept)}
        return Candidates(
            keys=[found.keys[i] for i in kept],
            cosines=found.cosines[:, kept],
            renderings=found.renderings,
            weights=found.weights,
            keyword=[(position[i], score) for i, score in found.keyword if i in position],
            keyword_half=found.keyword_half,
        )

    def _extend_manifest(self, manifest: IndexManifest) -> IndexManifest:
        """Record `manifest`, the stored one plus optional renderings; a store that cannot keeps its own."""
        return self._record_manifest(manifest)

    def ensure_manifest(self, manifest: IndexManifest) -> IndexManifest:
        stored = self._record_manifest(manifest)
        check_parity(stored, manifest, self.index_name, "write to")
        self._check_index(manifest)
        wider = extended(stored, manifest)
        return stored if wider is None else self._extend_manifest(wider)

    def upsert(self, record: CardRecord, vectors: Sequence[StoredVector], manifest: IndexManifest) -> None:
        require_tenant(record.tenant_id)
        if not record.session_id:
            raise InvalidStoreInputError("a card record needs a session id")
        if not vectors:
            raise InvalidStoreInputError("a card needs at least one rendering vector")
        index = self.ensure_manifest(manifest)
        rows: list[tuple[str, np.ndarray]] = []
        for stored in vectors:
            if stored.rendering in UNEMBEDDED_WHEN_UNUSED and stored.rendering not in index.renderings:
                continue  # an index that could not gain it ranks the card on its card renderings alone
            if stored.rendering not in manifest.renderings:
                raise ParityError(
                    f"rendering {stored.rendering!r} is not in the index manifest {manifest.renderings}"
                )
            if any(stored.rendering == seen for seen, _ in rows):
                raise InvalidStoreInputError(f"rendering {stored.rendering!r} given twice in one upsert")
            rows.append(
                (stored.rendering, unit_vector(stored.vector, manifest, f"the {stored.rendering} vector"))
            )
        self._write(record, rows)

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
            raise InvalidStoreInputError(f"k must be at least 1, got {k}")
        query = unit_vector(query_vector, manifest, "the query vector")
        with self._snapshot() as handle:
            stored = self.manifest()
            if stored is None:
                return []  # nothing was ever indexed here
            check_parity(stored, manifest, self.index_name, "query")
            found = self._candidates(handle, CandidateQuery(tenant, query, query_text, k, filters, stored))
            found = self._without_excluded(handle, tenant, found, filters)
            if not found.keys:
                return []
            fused = hybrid.rank_pool(
                found.cosines,
                found.weights,
                found.renderings,
                found.keyword,
                k=k,
                depth=max(hybrid.CANDIDATES, k),
                min_similarity=min_similarity,
                keyword_weight=self.keyword_weight,
            )
            if not fused:
                return []
            resolved = self._resolve(handle, tenant, [found.keys[f.key] for f in fused], query)
        hits: list[SearchHit] = []
        for f in fused:
            key = found.keys[f.key]
            if key not in resolved:
                continue
            record = resolved[key]
            if record.tenant_id != tenant:  # defence in depth: never hand out another tenant's card
                continue
            hits.append(
                SearchHit(
                    record=record,
                    score=f.score,
                    similarity=f.similarity,
                    rendering=f.rendering,
                    keyword_rank=f.keyword_rank,
                    keyword_score=f.keyword_score if found.keyword_half else None,
                    pool_size=len(found.keys),
                )
            )
        return hits


def ranked_by(scores: dict[int, float], *, descending: bool = True) -> list[int]:
    """Keys best first (ties by key, so rankings are stable)."""
    sign = -1.0 if descending else 1.0
    return sorted(scores, key=lambda key: (sign * scores[key], key))
