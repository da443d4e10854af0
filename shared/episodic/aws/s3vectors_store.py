"""VectorStore over Amazon S3 Vectors (layout and limits in `s3vectors_metadata`).

Data access only: the contract's rules (tenant, renderings, vectors, parity, fusion, threshold and
keyword rescue) are `store.base.RuleEnforcingStore`'s, the same as the SQLite store's. Hybrid search
(queryVector + queryTexts on the `text` key) is used when the index is ENHANCED with full-text search on
`text` (read once from GetIndex) and the SDK can send it (`search_mode`), or when the constructor says so;
otherwise vector-only. The service's
answer is taken apart into one vector ranking per rendering and the BM25 ranking, which the core fuses
(the service's own RRF score is not used, so both stores rank by one rule); a keyword-only hit's
similarity is computed from its stored vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from episodic.aws._calls import error_code, error_message, retried_call
from episodic.aws.s3vectors_metadata import (
    MANIFEST_KEY,
    RECORD_KEY,
    TEXT_KEY,
    build_filter,
    vector_key,
    vector_metadata,
)
from episodic.aws.search_mode import HYBRID, VECTOR_ONLY, SearchMode, search_mode
from episodic.kernel.errors import ConfigError, ParityError, RetryableDistillError
from episodic.kernel.models import (
    DEFAULT_KEYWORD_WEIGHT,
    DEFAULT_RENDERING_WEIGHTS,
    RENDERINGS,
    CardRecord,
    IndexManifest,
)
from episodic.kernel.ports import ReviewableStore
from episodic.store.base import CandidateQuery, Candidates, RuleEnforcingStore
from episodic.store.render import keyword_text

PUT_BATCH = 500
GET_BATCH = 100
MAX_TOP_K = 100
MAX_QUERY_TEXT_CHARS = 1024
THROTTLE_CODES = frozenset(
    {"ServiceUnavailableException", "TooManyRequestsException", "RequestTimeoutException"}
)


class S3VectorsStore(RuleEnforcingStore, ReviewableStore):
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
        keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
        rendering_weights: Mapping[str, float] | None = None,
    ) -> None:
        self.client = client
        self.keyword_weight = keyword_weight
        self.rendering_weights = dict(
            DEFAULT_RENDERING_WEIGHTS if rendering_weights is None else rendering_weights
        )
        self.vector_bucket = vector_bucket
        self._index_name = index_name
        self._hybrid = hybrid
        self._mode: SearchMode | None = (
            None if hybrid is None else SearchMode(HYBRID if hybrid else VECTOR_ONLY, "set by the caller", "")
        )
        self._index_dimension: int | None = None
        self._manifest: IndexManifest | None = None
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep

    # ------------------------------------------------------------ calls

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        method = getattr(self.client, operation)
        try:
            result: dict[str, Any] = retried_call(
                lambda: method(vectorBucketName=self.vector_bucket, indexName=self._index_name, **kwargs),
                f"S3 Vectors {operation}",
                retry_codes=THROTTLE_CODES,
                attempts=self.max_attempts,
                base_delay=self.base_delay,
                sleep=self.sleep,
            )
            return result
        except RetryableDistillError:
            raise
        except Exception as exc:
            code = error_code(exc)
            if code == "NotFoundException":
                raise ConfigError(
                    f"S3 Vectors index {self.index_name} not found "
                    f"({error_message(exc)}): deploy the stack or set EPISODIC_VECTOR_BUCKET/EPISODIC_VECTOR_INDEX"
                ) from exc
            if code == "AccessDeniedException":
                raise ConfigError(f"S3 Vectors {operation} denied: {error_message(exc)}") from exc
            raise

    @property
    def index_name(self) -> str:
        return f"{self.vector_bucket}/{self._index_name}"

    def _describe_index(self) -> None:
        index = self._call("get_index").get("index", {})
        self._index_dimension = int(index.get("dimension", 0)) or None
        if self._hybrid is None:
            self._mode = search_mode(self.client, index, TEXT_KEY)
            self._hybrid = self._mode.hybrid

    @property
    def hybrid(self) -> bool:
        if self._hybrid is None:
            self._describe_index()
        return bool(self._hybrid)

    def search_mode(self) -> SearchMode:
        """Hybrid or vector-only, and why (read once from GetIndex and the SDK's model)."""
        if self._mode is None:
            self._describe_index()
        assert self._mode is not None
        return self._mode

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

    def _record_manifest(self, manifest: IndexManifest) -> IndexManifest:
        stored = self.manifest()
        if stored is not None:
            return stored
        self._check_index(manifest)  # before the first write: the index must hold this dimension
        return self._put_manifest(manifest)

    def _extend_manifest(self, manifest: IndexManifest) -> IndexManifest:
        return self._put_manifest(manifest)  # PutVectors overwrites the manifest key in place

    def _put_manifest(self, manifest: IndexManifest) -> IndexManifest:
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
        return manifest

    def _check_index(self, manifest: IndexManifest) -> None:
        if self._index_dimension is None:
            self._describe_index()
        if self._index_dimension and self._index_dimension != manifest.dimension:
            raise ParityError(
                f"index {self.index_name} holds {self._index_dimension}-d vectors, "
                f"embedder {manifest.embedder_id} makes {manifest.dimension}-d ones"
            )

    def _renderings(self) -> list[str]:
        stored = self.manifest()
        return list(stored.renderings) if stored else list(RENDERINGS)

    # ------------------------------------------------------------ writes

    def _write(self, record: CardRecord, vectors: list[tuple[str, np.ndarray]]) -> None:
        if record.indexed_at is None:
            record = record.model_copy(update={"indexed_at": datetime.now(UTC)})
        seen = [rendering for rendering, _ in vectors]
        stored = self.manifest()
        order = list(stored.renderings) if stored else list(RENDERINGS)
        primary = next(r for r in order if r in seen)  # carries the keyword text: BM25 ranks a session once
        text = keyword_text(record.card)
        entries = []
        for rendering, vector in vectors:
            entries.append(
                {
                    "key": vector_key(record.tenant_id, record.session_id, rendering),
                    "data": {"float32": [float(x) for x in vector]},
                    "metadata": vector_metadata(record, rendering, text if rendering == primary else None),
                }
            )
        self._put(entries)  # PutVectors overwrites existing keys: the session's card is replaced
        # a rendering the card no longer has (an LLM card replacing an offline one has no opening)
        stale = [vector_key(record.tenant_id, record.session_id, r) for r in order if r not in seen]
        self._delete(stale)

    def delete(self, tenant_id: str, session_id: str) -> bool:
        keys = [vector_key(tenant_id, session_id, r) for r in RENDERINGS]
        existing = [v["key"] for v in self._get(keys, metadata=False)]
        if existing:
            self._delete(existing)
        return bool(existing)

    def rewrite_record(self, record: CardRecord) -> None:
        """The review lives in each vector's metadata: the session's vectors are put back unchanged."""
        keys = [vector_key(record.tenant_id, record.session_id, r) for r in self._renderings()]
        vectors = [
            (str(v["key"]).rsplit("#", 1)[-1], np.asarray(v["data"]["float32"], dtype=np.float32))
            for v in self._get(keys, data=True, metadata=False)
            if (v.get("data") or {}).get("float32")
        ]
        if vectors:
            self._write(record, vectors)

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

    @contextmanager
    def _snapshot(self) -> Iterator[dict[int, dict[str, Any]]]:
        yield {}  # the sessions this query found, by key: what `_resolve` reads

    def _candidates(self, handle: dict[int, dict[str, Any]], query: CandidateQuery) -> Candidates:
        tenant_id, filters, stored = query.tenant_id, query.filters, query.stored
        names, weights = self.voting(stored.renderings, filters)
        if not names:
            return Candidates()
        vector = [float(x) for x in query.vector]
        request: dict[str, Any] = {
            # the pool the vector half is standardised over: as large as the service allows
            "topK": MAX_TOP_K,
            "queryVector": {"float32": vector},
            "filter": build_filter(
                tenant_id,
                verified_only=not filters.include_unverified,
                project=filters.project,
                tags=list(filters.tags),
                since=filters.since,
                renderings=names,
                agent=filters.agent,
                approved_only=filters.approved_only,
                exclude_sessions=list(filters.exclude_sessions),
            ),
            "returnMetadata": True,
            "returnDistance": True,
        }
        text = query.text.strip()[:MAX_QUERY_TEXT_CHARS]
        if self.hybrid and text:
            request["queryTexts"] = [{"text": text, "metadataKey": TEXT_KEY}]
            request["returnScores"] = True
        hits = self._call("query_vectors", **request).get("vectors", [])
        sessions = self._group(hits, tenant_id, handle)
        self._fill_missing(sessions, names, query.vector)
        keys = list(sessions)
        cosines = np.full((len(names), len(keys)), -np.inf, dtype=np.float32)
        for column, key in enumerate(keys):
            for row, name in enumerate(names):
                cosine = sessions[key]["by_rendering"].get(name)
                if cosine is not None:
                    cosines[row, column] = cosine
        scored = [(column, sessions[key]["bm25"]) for column, key in enumerate(keys) if sessions[key]["bm25"]]
        keyword = sorted(scored, key=lambda pair: (-pair[1], pair[0]))
        return Candidates(
            keys=keys,
            cosines=cosines,
            renderings=names,
            weights=weights,
            keyword=keyword,
            keyword_half=bool(self.hybrid and text),
        )

    @staticmethod
    def _group(
        hits: list[dict[str, Any]], tenant_id: str, sessions: dict[int, dict[str, Any]]
    ) -> dict[int, dict[str, Any]]:
        """Per-rendering hits grouped by session: similarity per rendering and the best BM25 score."""
        keys: dict[str, int] = {}
        for hit in hits:
            meta = hit.get("metadata") or {}
            if meta.get("tenant") != tenant_id or RECORD_KEY not in meta:
                continue  # defence in depth: the filter already scoped the tenant
            scores = hit.get("scores") or {}
            distance = scores.get("vectorDistance", hit.get("distance"))
            bm25 = max((float(s.get("score", 0.0)) for s in scores.get("bm25Scores", []) or []), default=None)
            session = str(meta.get("session_id"))
            key = keys.setdefault(session, len(keys))
            entry = sessions.setdefault(
                key,
                {
                    "meta": meta,
                    "bm25": None,
                    "keys": [],
                    "by_rendering": {},
                },
            )
            entry["keys"].append(hit["key"])
            if distance is not None:
                entry["by_rendering"][str(meta.get("rendering"))] = 1.0 - float(distance)
            if bm25 is not None:
                entry["bm25"] = max(bm25, entry["bm25"] or 0.0)
        return sessions

    def _excluded_keys(
        self, handle: dict[int, dict[str, Any]], tenant_id: str, keys: Sequence[int], session_ids: set[str]
    ) -> set[int]:
        return {key for key in keys if str(handle[key]["meta"].get("session_id")) in session_ids}

    def _resolve(
        self, handle: dict[int, dict[str, Any]], tenant_id: str, keys: Sequence[int], query: np.ndarray
    ) -> dict[int, CardRecord]:
        return {key: CardRecord.model_validate_json(handle[key]["meta"][RECORD_KEY]) for key in keys}

    def _fill_missing(
        self, sessions: dict[int, dict[str, Any]], names: Sequence[str], query: np.ndarray
    ) -> None:
        """A pool session the service returned for one rendering only (or for its keywords only) gets the
        cosines of its other voting renderings from the stored vectors, so every session is blended alike."""
        wanted: dict[str, tuple[int, str]] = {}
        for key, entry in sessions.items():
            if not entry["keys"]:
                continue
            base = entry["keys"][0].rsplit("#", 1)[0]
            for name in names:
                if name not in entry["by_rendering"]:
                    wanted[f"{base}#{name}"] = (key, name)
        if not wanted:
            return
        unit = query / max(float(np.linalg.norm(query)), 1e-12)
        for found in self._get(list(wanted), data=True, metadata=False):
            data = (found.get("data") or {}).get("float32")
            if not data or found.get("key") not in wanted:
                continue
            key, name = wanted[found["key"]]
            stored = np.asarray(data, dtype=np.float32)
            norm = float(np.linalg.norm(stored))
            sessions[key]["by_rendering"][name] = float(stored @ unit) / norm if norm else 0.0
