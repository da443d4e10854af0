"""Cards on OpenSearch Serverless: the same VectorStore contract as SQLite and S3 Vectors, chosen by
`EPISODIC_STORE=opensearch` (an alternative to S3 Vectors; its cost in docs/aws.md).

One document per session: the card record (stored, not indexed), its keyword text (BM25), filter fields
(keyword tenant/project/agent/outcome/tags, date started_at) and one `knn_vector` per indexed rendering.
A query is one `_msearch` round trip holding the k-NN half (a `knn` clause per voting rendering, the
filters inside each and in `bool.filter`) and the BM25 half (`match` on the text, same filters); the core
fuses them (`store.hybrid`, as for the other stores), with cosines computed from the returned vectors so
every pool session is blended alike. Serverless vector collections assign document ids: a replaced card's
old document is found by query and removed with a bulk `delete`. `iter_records` pages with from/size and
stops at the 10,000-result window (stats and re-indexing only).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC
from typing import Any

import numpy as np

from episodic.kernel.errors import ParityError
from episodic.kernel.models import (
    DEFAULT_KEYWORD_WEIGHT,
    DEFAULT_RENDERING_WEIGHTS,
    CardRecord,
    IndexManifest,
    Outcome,
)
from episodic.store.base import CandidateQuery, Candidates, RuleEnforcingStore
from episodic.store.parity import require_tenant
from episodic.store.render import keyword_text

POOL = 100  # candidates per half: the pool the vector half is standardised over (as S3 Vectors' top-K)
PAGE = 1000
MAX_WINDOW = 10_000
MAX_QUERY_TEXT_CHARS = 1024


def vector_field(rendering: str) -> str:
    return f"vec_{rendering}"


def cards_mapping(manifest: IndexManifest) -> dict[str, Any]:
    method = {
        "name": "hnsw",
        "engine": "faiss",
        "space_type": "cosinesimil",
        "parameters": {"ef_construction": 128, "m": 16},
    }
    properties: dict[str, Any] = {
        "tenant_id": {"type": "keyword"},
        "session_id": {"type": "keyword"},
        "project": {"type": "keyword"},
        "agent": {"type": "keyword"},
        "outcome": {"type": "keyword"},
        "tags": {"type": "keyword"},
        "started_at": {"type": "date"},
        "text": {"type": "text"},
        "record": {"type": "object", "enabled": False},
    }
    for rendering in manifest.renderings:
        properties[vector_field(rendering)] = {
            "type": "knn_vector",
            "dimension": manifest.dimension,
            "method": method,
        }
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {"_meta": {"manifest": manifest.model_dump(mode="json")}, "properties": properties},
    }


class OpenSearchCardStore(RuleEnforcingStore):
    def __init__(
        self,
        client: Any,
        index: str,
        *,
        keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
        rendering_weights: dict[str, float] | None = None,
    ) -> None:
        self.client = client
        self.index = index
        self.keyword_weight = keyword_weight
        self.rendering_weights = dict(
            DEFAULT_RENDERING_WEIGHTS if rendering_weights is None else rendering_weights
        )
        self._manifest: IndexManifest | None = None
        self._mapped_dimensions: dict[str, Any] = {}

    @property
    def index_name(self) -> str:
        return f"opensearch:{self.index}"

    # ------------------------------------------------------------ manifest

    def manifest(self) -> IndexManifest | None:
        if self._manifest is None and self.client.indices.exists(index=self.index):
            found: dict[str, Any] = self.client.indices.get_mapping(index=self.index)
            entry: dict[str, Any] = found.get(self.index) or next(iter(found.values()), {})
            mappings: dict[str, Any] = entry.get("mappings", {})
            raw = (mappings.get("_meta") or {}).get("manifest")
            self._manifest = IndexManifest.model_validate(raw) if raw else None
            self._mapped_dimensions = {
                name: spec.get("dimension")
                for name, spec in (mappings.get("properties") or {}).items()
                if spec.get("type") == "knn_vector"
            }
        return self._manifest

    def _record_manifest(self, manifest: IndexManifest) -> IndexManifest:
        stored = self.manifest()
        if stored is not None:
            return stored
        if not self.client.indices.exists(index=self.index):
            self.client.indices.create(index=self.index, body=cards_mapping(manifest))
        self._manifest = None
        stored = self.manifest()
        if stored is None:
            raise ParityError(f"the index {self.index_name} exists but records no card manifest in its _meta")
        return stored

    def _check_index(self, manifest: IndexManifest) -> None:
        wrong = {n: d for n, d in self._mapped_dimensions.items() if d != manifest.dimension}
        if wrong:
            raise ParityError(
                f"index {self.index_name} maps {wrong} but embedder {manifest.embedder_id} makes "
                f"{manifest.dimension}-d vectors"
            )

    # ------------------------------------------------------------ writes

    def _session_filter(self, tenant_id: str, session_id: str) -> list[dict[str, Any]]:
        return [{"term": {"tenant_id": require_tenant(tenant_id)}}, {"term": {"session_id": session_id}}]

    def _ids(self, filters: list[dict[str, Any]]) -> list[str]:
        body = {"size": PAGE, "query": {"bool": {"filter": filters}}, "_source": False}
        return [h["_id"] for h in self.client.search(index=self.index, body=body)["hits"]["hits"]]

    def _delete_ids(self, ids: Sequence[str]) -> None:
        if ids:
            self.client.bulk(body=[{"delete": {"_index": self.index, "_id": i}} for i in ids])

    def _write(self, record: CardRecord, vectors: list[tuple[str, np.ndarray]]) -> None:
        stale = self._ids(self._session_filter(record.tenant_id, record.session_id))
        document: dict[str, Any] = {
            "tenant_id": record.tenant_id,
            "session_id": record.session_id,
            "project": record.project,
            "agent": record.agent,
            "outcome": record.card.outcome.value,
            "tags": sorted({t.lower() for t in record.card.tags}),
            "text": keyword_text(record.card),
            "record": record.model_dump(mode="json"),
        }
        if record.started_at is not None:
            document["started_at"] = record.started_at.isoformat()
        for rendering, vector in vectors:
            document[vector_field(rendering)] = [float(x) for x in vector]
        answer = self.client.bulk(body=[{"index": {"_index": self.index}}, document])  # no _id: assigned
        if answer.get("errors"):
            raise RuntimeError(f"OpenSearch refused the card of {record.session_id}: {answer.get('items')}")
        self._delete_ids(stale)

    def delete(self, tenant_id: str, session_id: str) -> bool:
        require_tenant(tenant_id)
        if self.manifest() is None:
            return False
        ids = self._ids(self._session_filter(tenant_id, session_id))
        self._delete_ids(ids)
        return bool(ids)

    # ------------------------------------------------------------ reads

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        require_tenant(tenant_id)
        if self.manifest() is None:
            return None
        body = {
            "size": 1,
            "query": {"bool": {"filter": self._session_filter(tenant_id, session_id)}},
            "_source": ["record"],
        }
        hits = self.client.search(index=self.index, body=body)["hits"]["hits"]
        return CardRecord.model_validate(hits[0]["_source"]["record"]) if hits else None

    def iter_records(self, tenant_id: str | None = None) -> Iterable[CardRecord]:
        return self._iter(tenant_id)

    def _iter(self, tenant_id: str | None) -> Iterator[CardRecord]:
        if self.manifest() is None:
            return
        filters = [] if tenant_id is None else [{"term": {"tenant_id": tenant_id}}]
        for start in range(0, MAX_WINDOW, PAGE):
            body = {
                "from": start,
                "size": PAGE,
                "query": {"bool": {"filter": filters}},
                "_source": ["record"],
            }
            hits = self.client.search(index=self.index, body=body)["hits"]["hits"]
            for hit in hits:
                yield CardRecord.model_validate(hit["_source"]["record"])
            if len(hits) < PAGE:
                return

    def count(self, tenant_id: str | None = None) -> int:
        if self.manifest() is None:
            return 0
        query: dict[str, Any] = {
            "bool": {"filter": [] if tenant_id is None else [{"term": {"tenant_id": tenant_id}}]}
        }
        return int(self.client.count(index=self.index, body={"query": query})["count"])

    @contextmanager
    def _snapshot(self) -> Iterator[dict[int, dict[str, Any]]]:
        yield {}  # the sessions this query found, by key: what `_resolve` reads

    @staticmethod
    def _filters(query: CandidateQuery) -> list[dict[str, Any]]:
        filters = query.filters
        found: list[dict[str, Any]] = [{"term": {"tenant_id": query.tenant_id}}]
        if not filters.include_unverified:
            found.append({"term": {"outcome": Outcome.VERIFIED.value}})
        if filters.project:
            found.append({"term": {"project": filters.project}})
        if filters.agent:
            found.append({"term": {"agent": filters.agent}})
        if filters.tags:
            found.append({"terms": {"tags": sorted({t.lower() for t in filters.tags})}})
        if filters.since is not None:
            since = filters.since if filters.since.tzinfo else filters.since.replace(tzinfo=UTC)
            found.append({"range": {"started_at": {"gte": since.isoformat()}}})
        return found

    def _candidates(self, handle: dict[int, dict[str, Any]], query: CandidateQuery) -> Candidates:
        names, weights = self.voting(query.stored.renderings, query.filters)
        if not names:
            return Candidates()
        filters = self._filters(query)
        vector = [float(x) for x in query.vector]
        source = ["record", *(vector_field(n) for n in names)]
        knn = [
            {"knn": {vector_field(n): {"vector": vector, "k": POOL, "filter": {"bool": {"filter": filters}}}}}
            for n in names
        ]
        searches: list[dict[str, Any]] = [
            {"index": self.index},
            {
                "size": POOL,
                "query": {"bool": {"filter": filters, "should": knn, "minimum_should_match": 1}},
                "_source": source,
            },
        ]
        text = query.text.strip()[:MAX_QUERY_TEXT_CHARS]
        if text:
            searches += [
                {"index": self.index},
                {
                    "size": POOL,
                    "query": {"bool": {"filter": filters, "must": [{"match": {"text": text}}]}},
                    "_source": source,
                },
            ]
        responses = self.client.msearch(body=searches)["responses"]
        for response in responses:
            if response.get("error"):
                raise RuntimeError(f"OpenSearch search failed: {response['error']}")
        sessions: dict[str, int] = {}
        vectors: list[np.ndarray] = []
        bm25: dict[int, float] = {}
        for half, response in enumerate(responses):
            for hit in response.get("hits", {}).get("hits", []):
                doc = hit.get("_source") or {}
                record = doc.get("record") or {}
                if record.get("tenant_id") != query.tenant_id:
                    continue  # defence in depth: the filter already scoped the tenant
                key = sessions.setdefault(str(record.get("session_id")), len(sessions))
                if key == len(vectors):
                    rows = [doc.get(vector_field(n)) for n in names]
                    vectors.append(
                        np.array([r if r else [np.nan] * len(vector) for r in rows], dtype=np.float32)
                    )
                    handle[key] = record
                if half == 1:
                    bm25[key] = max(bm25.get(key, 0.0), float(hit.get("_score") or 0.0))
        if not sessions:
            return Candidates()
        stacked = np.stack(vectors, axis=1)  # (renderings, sessions, dimension)
        norms = np.linalg.norm(stacked, axis=2)
        cosines = np.where(
            np.isfinite(norms) & (norms > 0),
            (stacked @ query.vector) / np.where(norms > 0, norms, 1),
            -np.inf,
        )
        cosines = cosines.astype(np.float32)
        keyword = sorted(bm25.items(), key=lambda pair: (-pair[1], pair[0]))
        return Candidates(
            keys=list(range(len(sessions))),
            cosines=cosines,
            renderings=names,
            weights=weights,
            keyword=keyword,
        )

    def _resolve(
        self,
        handle: dict[int, dict[str, Any]],
        tenant_id: str,
        keys: Sequence[int],
        query: np.ndarray,
    ) -> dict[int, CardRecord]:
        return {key: CardRecord.model_validate(handle[key]) for key in keys if key in handle}
