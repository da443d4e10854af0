"""VectorStore over Amazon S3 Vectors (layout and limits in `s3vectors_metadata`).

Hybrid search (queryVector + queryTexts on the `text` key, RRF-fused by the service) is used when the
index is ENHANCED with full-text search configured on `text` (read once from GetIndex) or when the
constructor says so; otherwise vector-only. The similarity threshold always applies to cosine
similarity (1 − cosine distance); a keyword-only hit's similarity is computed from its stored vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from episodic.aws._calls import RetriesExhausted, error_code, error_message, with_backoff
from episodic.aws.s3vectors_metadata import (
    MANIFEST_KEY,
    RECORD_KEY,
    TEXT_KEY,
    build_filter,
    check_tenant,
    vector_key,
    vector_metadata,
)
from episodic.errors import ConfigError, InvalidArgumentError, ParityError, RetryableDistillError
from episodic.models import RENDERINGS, CardRecord, IndexManifest, SearchFilters, SearchHit
from episodic.ports import StoredVector, VectorStore
from episodic.render import keyword_text

PUT_BATCH = 500
GET_BATCH = 100
MAX_TOP_K = 100
MAX_QUERY_TEXT_CHARS = 1024
THROTTLE_CODES = frozenset(
    {"ServiceUnavailableException", "TooManyRequestsException", "RequestTimeoutException"}
)


def _manifests_match(a: IndexManifest, b: IndexManifest) -> bool:
    return (a.embedder_id, a.dimension, sorted(a.renderings), a.card_schema_version) == (
        b.embedder_id,
        b.dimension,
        sorted(b.renderings),
        b.card_schema_version,
    )


class InvalidVectorError(InvalidArgumentError, ValueError):
    """A zero, NaN or Inf vector: refused before it reaches the service."""


def _unit_vector(vector: np.ndarray, dimension: int, what: str) -> list[float]:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape[0] != dimension:
        raise ParityError(f"{what} has dimension {array.shape[0]}, the index holds {dimension}-d vectors")
    if not np.all(np.isfinite(array)):
        raise InvalidVectorError(f"{what} contains NaN or Inf")
    if not np.any(array):
        raise InvalidVectorError(f"{what} is all zeros (cosine is undefined; S3 Vectors rejects it)")
    return [float(x) for x in array]


class S3VectorsStore(VectorStore):
    def __init__(
        self,
        client: Any,
        vector_bucket: str,
        index_name: str,
        *,
        hybrid: bool | None = None,
        max_attempts: int = 5,
        base_delay: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.vector_bucket = vector_bucket
        self.index_name = index_name
        self._hybrid = hybrid
        self._index_dimension: int | None = None
        self._manifest: IndexManifest | None = None
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep

    # ------------------------------------------------------------ calls

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        method = getattr(self.client, operation)
        try:
            result: dict[str, Any] = with_backoff(
                lambda: method(vectorBucketName=self.vector_bucket, indexName=self.index_name, **kwargs),
                retry_codes=THROTTLE_CODES,
                attempts=self.max_attempts,
                base_delay=self.base_delay,
                sleep=self.sleep,
            )
            return result
        except RetriesExhausted as exc:
            raise RetryableDistillError(f"S3 Vectors {operation} throttled: {exc}") from exc
        except Exception as exc:
            code = error_code(exc)
            if code == "NotFoundException":
                raise ConfigError(
                    f"S3 Vectors index {self.vector_bucket}/{self.index_name} not found "
                    f"({error_message(exc)}): deploy the stack or set EPISODIC_VECTOR_BUCKET/EPISODIC_VECTOR_INDEX"
                ) from exc
            if code == "AccessDeniedException":
                raise ConfigError(f"S3 Vectors {operation} denied: {error_message(exc)}") from exc
            raise

    def _describe_index(self) -> None:
        index = self._call("get_index").get("index", {})
        self._index_dimension = int(index.get("dimension", 0)) or None
        if self._hybrid is None:
            text_keys = {
                c.get("metadataKey")
                for c in (index.get("metadataConfiguration") or {}).get("textSearchConfigurations", []) or []
            }
            self._hybrid = index.get("indexMode") == "ENHANCED" and TEXT_KEY in text_keys

    @property
    def hybrid(self) -> bool:
        if self._hybrid is None:
            self._describe_index()
        return bool(self._hybrid)

    def _get(self, keys: Sequence[str], *, data: bool = False, metadata: bool = True) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), GET_BATCH):
            response = self._call(
                "get_vectors",
                keys=list(keys[start : start + GET_BATCH]),
                returnData=data,
                returnMetadata=metadata,
            )
            found.extend(response.get("vectors", []))
        return found

    def _put(self, vectors: list[dict[str, Any]]) -> None:
        for start in range(0, len(vectors), PUT_BATCH):
            self._call("put_vectors", vectors=vectors[start : start + PUT_BATCH])

    def _delete(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), PUT_BATCH):
            self._call("delete_vectors", keys=list(keys[start : start + PUT_BATCH]))

    # ------------------------------------------------------------ parity

    def manifest(self) -> IndexManifest | None:
        if self._manifest is None:
            for vector in self._get([MANIFEST_KEY]):
                raw = (vector.get("metadata") or {}).get(RECORD_KEY)
                if raw:
                    self._manifest = IndexManifest.model_validate_json(raw)
        return self._manifest

    def ensure_manifest(self, manifest: IndexManifest) -> None:
        stored = self.manifest()
        if stored is not None and not _manifests_match(stored, manifest):
            raise ParityError(
                f"index {self.index_name} was built with embedder {stored.embedder_id} ({stored.dimension}-d, "
                f"renderings {stored.renderings}, card schema v{stored.card_schema_version}); this run uses "
                f"{manifest.embedder_id} ({manifest.dimension}-d, renderings {manifest.renderings}, "
                f"card schema v{manifest.card_schema_version}). Re-index into a new index or switch back."
            )
        if self._index_dimension is None:
            self._describe_index()
        if self._index_dimension and self._index_dimension != manifest.dimension:
            raise ParityError(
                f"index {self.index_name} holds {self._index_dimension}-d vectors, "
                f"embedder {manifest.embedder_id} makes {manifest.dimension}-d ones"
            )
        if stored is None:
            dummy = np.zeros(manifest.dimension, dtype=np.float32)
            dummy[0] = 1.0  # never all-zero: cosine indexes reject it
            self._put(
                [
                    {
                        "key": MANIFEST_KEY,
                        "data": {"float32": [float(x) for x in dummy]},
                        "metadata": {"kind": "manifest", RECORD_KEY: manifest.model_dump_json()},
                    }
                ]
            )
            self._manifest = manifest

    def _renderings(self) -> list[str]:
        stored = self.manifest()
        return list(stored.renderings) if stored else list(RENDERINGS)

    # ------------------------------------------------------------ writes

    def upsert(self, record: CardRecord, vectors: Sequence[StoredVector], manifest: IndexManifest) -> None:
        check_tenant(record.tenant_id)
        self.ensure_manifest(manifest)
        seen = [v.rendering for v in vectors]
        if len(set(seen)) != len(seen):
            raise InvalidArgumentError(f"duplicate renderings in one upsert: {seen}")
        unknown = [r for r in seen if r not in manifest.renderings]
        if unknown:
            raise ParityError(f"renderings {unknown} are not in the index manifest {manifest.renderings}")
        if not vectors:
            raise InvalidArgumentError("an upsert needs at least one rendering vector")
        if record.indexed_at is None:
            record = record.model_copy(update={"indexed_at": datetime.now(UTC)})
        primary = next(r for r in manifest.renderings if r in seen)
        text = keyword_text(record.card)
        entries = []
        for stored_vector in vectors:
            key = vector_key(record.tenant_id, record.session_id, stored_vector.rendering)
            entries.append(
                {
                    "key": key,
                    "data": {
                        "float32": _unit_vector(stored_vector.vector, manifest.dimension, f"vector {key}")
                    },
                    "metadata": vector_metadata(
                        record, stored_vector.rendering, text if stored_vector.rendering == primary else None
                    ),
                }
            )
        self._put(entries)  # PutVectors overwrites existing keys: the session's card is replaced
        stale = [vector_key(record.tenant_id, record.session_id, r) for r in RENDERINGS if r not in seen]
        self._delete(stale)

    def delete(self, tenant_id: str, session_id: str) -> bool:
        keys = [vector_key(tenant_id, session_id, r) for r in RENDERINGS]
        existing = [v["key"] for v in self._get(keys, metadata=False)]
        if existing:
            self._delete(existing)
        return bool(existing)

    # ------------------------------------------------------------ reads

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        keys = [vector_key(tenant_id, session_id, r) for r in self._renderings()]
        for vector in sorted(self._get(keys), key=lambda v: keys.index(v["key"])):
            raw = (vector.get("metadata") or {}).get(RECORD_KEY)
            if raw:
                record = CardRecord.model_validate_json(raw)
                if record.tenant_id == tenant_id:
                    return record
        return None

    def iter_records(self, tenant_id: str | None = None) -> Iterable[CardRecord]:
        return self._iter_records(tenant_id)

    def _iter_records(self, tenant_id: str | None) -> Iterator[CardRecord]:
        seen: set[tuple[str, str]] = set()
        token: str | None = None
        while True:
            page = self._call(
                "list_vectors", maxResults=500, returnMetadata=True, **({"nextToken": token} if token else {})
            )
            for vector in page.get("vectors", []):
                meta = vector.get("metadata") or {}
                if vector.get("key") == MANIFEST_KEY or RECORD_KEY not in meta:
                    continue
                if tenant_id is not None and meta.get("tenant") != tenant_id:
                    continue
                ident = (str(meta.get("tenant")), str(meta.get("session_id")))
                if ident in seen:
                    continue
                seen.add(ident)
                yield CardRecord.model_validate_json(meta[RECORD_KEY])
            token = page.get("nextToken")
            if not token:
                return

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
        check_tenant(tenant_id)
        if k < 1:
            raise InvalidArgumentError(f"k must be at least 1, got {k}")
        stored = self.manifest()
        if stored is None:
            return []  # nothing was ever indexed here
        self.ensure_manifest(manifest)
        vector = _unit_vector(query_vector, manifest.dimension, "query vector")
        request: dict[str, Any] = {
            "topK": min(MAX_TOP_K, k * len(stored.renderings) * 2),
            "queryVector": {"float32": vector},
            "filter": build_filter(
                tenant_id,
                verified_only=not filters.include_unverified,
                project=filters.project,
                tags=list(filters.tags),
                since=filters.since,
                renderings=list(filters.renderings),
                agent=filters.agent,
            ),
            "returnMetadata": True,
            "returnDistance": True,
        }
        text = query_text.strip()[:MAX_QUERY_TEXT_CHARS]
        if self.hybrid and text:
            request["queryTexts"] = [{"text": text, "metadataKey": TEXT_KEY}]
            request["returnScores"] = True
        hits = self._call("query_vectors", **request).get("vectors", [])
        return self._rank(hits, np.asarray(vector, dtype=np.float32), tenant_id, k, min_similarity)

    def _rank(
        self, hits: list[dict[str, Any]], query: np.ndarray, tenant_id: str, k: int, min_similarity: float
    ) -> list[SearchHit]:
        """Group per-rendering hits by session: best similarity, best fused score, keyword rank."""
        sessions: dict[str, dict[str, Any]] = {}
        for position, hit in enumerate(hits):
            meta = hit.get("metadata") or {}
            if meta.get("tenant") != tenant_id or RECORD_KEY not in meta:
                continue  # defence in depth: the filter already scoped the tenant
            scores = hit.get("scores") or {}
            distance = scores.get("vectorDistance", hit.get("distance"))
            similarity = None if distance is None else 1.0 - float(distance)
            fused = scores.get("fused")
            bm25 = max((float(s.get("score", 0.0)) for s in scores.get("bm25Scores", []) or []), default=None)
            entry = sessions.setdefault(
                str(meta.get("session_id")),
                {
                    "meta": meta,
                    "similarity": None,
                    "rendering": None,
                    "fused": None,
                    "bm25": None,
                    "keys": [],
                    "position": position,
                },
            )
            entry["keys"].append(hit["key"])
            if similarity is not None and (entry["similarity"] is None or similarity > entry["similarity"]):
                entry["similarity"], entry["rendering"] = similarity, meta.get("rendering")
            if fused is not None:
                entry["fused"] = max(float(fused), entry["fused"] or 0.0)
            if bm25 is not None:
                entry["bm25"] = max(bm25, entry["bm25"] or 0.0)
        self._fill_keyword_only(sessions, query)
        by_bm25 = sorted((s for s in sessions.values() if s["bm25"]), key=lambda s: -s["bm25"])
        for rank, entry in enumerate(by_bm25, start=1):
            entry["keyword_rank"] = rank
        results = []
        for entry in sessions.values():
            similarity = entry["similarity"]
            if similarity is None or similarity < min_similarity:
                continue  # silence beats noise
            results.append(
                SearchHit(
                    record=CardRecord.model_validate_json(entry["meta"][RECORD_KEY]),
                    score=entry["fused"] if entry["fused"] is not None else similarity,
                    similarity=similarity,
                    rendering=entry["rendering"],
                    keyword_rank=entry.get("keyword_rank"),
                )
            )
        results.sort(key=lambda h: (-h.score, -h.similarity))
        return results[:k]

    def _fill_keyword_only(self, sessions: dict[str, dict[str, Any]], query: np.ndarray) -> None:
        """A keyword-only hybrid hit has no vector distance: compute its cosine from the stored vector."""
        missing = [e for e in sessions.values() if e["similarity"] is None]
        keys = [key for e in missing for key in e["keys"]]
        if not keys:
            return
        by_key = {v["key"]: v for v in self._get(keys, data=True, metadata=False)}
        for entry in missing:
            for key in entry["keys"]:
                data = (by_key.get(key, {}).get("data") or {}).get("float32")
                if not data:
                    continue
                stored = np.asarray(data, dtype=np.float32)
                norm = float(np.linalg.norm(stored) * np.linalg.norm(query))
                similarity = float(stored @ query) / norm if norm else 0.0
                if entry["similarity"] is None or similarity > entry["similarity"]:
                    entry["similarity"], entry["rendering"] = similarity, key.rsplit("#", 1)[-1]
