"""The leave-one-out view: every positive asked again with its target (and the target's cousins) left out.

Whatever the hook or `search_traces` then gives as a full card is a neighbour shown as the answer, so each
positive is also a near-miss negative for free. The sessions are left out by the store's own filter
(`SearchFilters.exclude_sessions`, enforced in `store.base`), so the pool the fused score is standardised
over, the judge and the tiers are those the prompt would meet had the target never been stored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from episodic.kernel.models import CardRecord, IndexManifest, SearchFilters, SearchHit
from episodic.kernel.ports import StoredVector, VectorStore


def standard_error(share: float, n: int) -> float:
    """The binomial standard error of a share measured over n prompts (0 when n is 0)."""
    return round(math.sqrt(max(share * (1.0 - share), 0.0) / n), 4) if n else 0.0


class ExcludingStore(VectorStore):
    """A store whose every query leaves out `sessions` (reads and writes otherwise pass through)."""

    def __init__(self, inner: VectorStore, sessions: Iterable[str]) -> None:
        self.inner = inner
        self.sessions = sorted({s for s in sessions if s})

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
        excluded = sorted({*filters.exclude_sessions, *self.sessions})
        narrowed = filters.model_copy(update={"exclude_sessions": excluded})
        return self.inner.query(tenant_id, query_vector, query_text, k, narrowed, manifest, min_similarity)

    def ensure_manifest(self, manifest: IndexManifest) -> IndexManifest:
        return self.inner.ensure_manifest(manifest)

    def manifest(self) -> IndexManifest | None:
        return self.inner.manifest()

    def upsert(self, record: CardRecord, vectors: Sequence[StoredVector], manifest: IndexManifest) -> None:
        self.inner.upsert(record, vectors, manifest)

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        return self.inner.get(tenant_id, session_id)

    def delete(self, tenant_id: str, session_id: str) -> bool:
        return self.inner.delete(tenant_id, session_id)

    def iter_records(self, tenant_id: str | None = None) -> Iterable[CardRecord]:
        return self.inner.iter_records(tenant_id)
