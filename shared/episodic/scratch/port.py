"""The scratch store port: tool-outcome records and their summary vectors, tenant-scoped, with a TTL.

The rules live here (template methods): the tenant on every call, unit vectors of the pinned dimension,
the manifest (embedder id + dimension) checked on first use, expired records never returned. Adapters
(SQLite, OpenSearch Serverless) only move data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from pydantic import BaseModel

from episodic.kernel.errors import InvalidArgumentError, ParityError
from episodic.kernel.models import check_tenant
from episodic.scratch.models import ScratchHit, ScratchRecord


class ScratchManifest(BaseModel):
    """The embedding a scratch index is written and queried with (pinned; checked at start)."""

    embedder_id: str
    dimension: int


def unit_rows(vectors: np.ndarray, dimension: int, what: str) -> np.ndarray:
    """Rows as unit float32 of `dimension`; ParityError on another dimension, InvalidArgumentError on zeros."""
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix = matrix.reshape(1, -1) if matrix.ndim == 1 else matrix
    if matrix.shape[1] != dimension:
        raise ParityError(
            f"{what} has dimension {matrix.shape[1]}, but the scratch index holds {dimension}-d"
        )
    norms = np.linalg.norm(matrix, axis=1)
    if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
        raise InvalidArgumentError(f"{what} holds a zero, NaN or Inf vector (cosine is undefined)")
    return (matrix / norms[:, None]).astype(np.float32)


class ScratchStore(ABC):
    """Scratch records of every tenant; each call names its tenant (none: a TenantError)."""

    @property
    @abstractmethod
    def index_name(self) -> str: ...

    # ------------------------------------------------------------ data access (adapters)

    @abstractmethod
    def _record_manifest(self, manifest: ScratchManifest) -> ScratchManifest:
        """Store `manifest` when the index has none; return the stored one (checked against the mapping)."""

    @abstractmethod
    def _stored_manifest(self) -> ScratchManifest | None:
        """The manifest the index holds, read only (None: nothing was ever written; a reader never creates)."""

    @abstractmethod
    def _write(self, records: Sequence[ScratchRecord], vectors: np.ndarray) -> int:
        """Add the records not yet stored (by record_id); how many were new."""

    @abstractmethod
    def _nearest(self, tenant_id: str, vector: np.ndarray, k: int, not_before: datetime) -> list[ScratchHit]:
        """The tenant's k closest records created at or after `not_before`, best first."""

    @abstractmethod
    def known_ids(self, tenant_id: str, record_ids: Sequence[str]) -> set[str]: ...

    @abstractmethod
    def sweep(self, before: datetime, after: datetime | None = None) -> int:
        """Delete every record (of every tenant) created before `before`, or after `after` (dated in the
        future: stored before such times were clamped); how many went."""

    @abstractmethod
    def delete_session(self, tenant_id: str, session_id: str) -> int: ...

    @abstractmethod
    def count(self, tenant_id: str | None = None) -> int: ...

    # ------------------------------------------------------------ the rules

    def ensure_manifest(self, manifest: ScratchManifest) -> None:
        self._check_parity(self._record_manifest(manifest), manifest)

    def _check_parity(self, stored: ScratchManifest, manifest: ScratchManifest) -> None:
        if stored != manifest:
            raise ParityError(
                f"the scratch index {self.index_name} holds {stored.dimension}-d vectors of "
                f"{stored.embedder_id}, but this memory embeds with {manifest.embedder_id} "
                f"({manifest.dimension}-d): pin the same model id and dimension, or use another index"
            )

    def add(self, records: Sequence[ScratchRecord], vectors: np.ndarray, manifest: ScratchManifest) -> int:
        if not records:
            return 0
        if len(records) != len(np.atleast_2d(vectors)):
            raise InvalidArgumentError(f"{len(records)} records but {len(np.atleast_2d(vectors))} vectors")
        for record in records:
            check_tenant(record.tenant_id)
        self.ensure_manifest(manifest)
        return self._write(records, unit_rows(vectors, manifest.dimension, "a scratch vector"))

    def query(
        self,
        tenant_id: str,
        vector: np.ndarray,
        k: int,
        not_before: datetime,
        manifest: ScratchManifest,
    ) -> list[ScratchHit]:
        tenant = check_tenant(tenant_id)
        if k < 1:
            raise InvalidArgumentError(f"k must be at least 1, got {k}")
        if not_before.tzinfo is None:
            raise InvalidArgumentError("not_before must carry a time zone")
        query = unit_rows(vector, manifest.dimension, "the query vector")[0]
        stored = self._stored_manifest()
        if stored is None:
            return []  # nothing indexed yet (the retriever role may not create the index)
        self._check_parity(stored, manifest)
        hits = self._nearest(tenant, query, k, not_before)
        # defence in depth: another tenant's or an expired record is never handed out
        return [h for h in hits if h.record.tenant_id == tenant and h.record.created_at >= not_before][:k]
