"""Scratch memory on OpenSearch Serverless (a VECTORSEARCH collection), through the official client.

The index mapping is the design's (`knn: true`, `knn_vector` HNSW cosine, keyword tenant/session/tool/outcome,
text summary, date created_at) with the pinned embedder in `_meta`, checked at start. Serverless vector
collections assign document ids themselves, so the record id is a keyword field: dedup asks for known ids,
deletes find the server's ids by query and remove them with bulk `delete` actions. Every search carries
`bool.filter: term tenant_id` (and the same filter inside `knn` so that k results come from the tenant).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from episodic.kernel.errors import ParityError
from episodic.scratch.models import ScratchHit, ScratchRecord, ToolOutcome
from episodic.scratch.port import ScratchManifest, ScratchStore

BULK_DOCS = 500  # documents a bulk request (well under the collection's payload limit at 1024-d)
PAGE = 1000  # ids a delete pass collects (below index.max_result_window, 10,000)
VECTOR_FIELD = "embedding"
SOURCE_FIELDS = ["record_id", "tenant_id", "session_id", "tool_name", "outcome", "summary", "created_at"]


def scratch_mapping(manifest: ScratchManifest) -> dict[str, Any]:
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "_meta": {"embedder_id": manifest.embedder_id, "dimension": manifest.dimension},
            "properties": {
                "record_id": {"type": "keyword"},
                "tenant_id": {"type": "keyword"},
                "session_id": {"type": "keyword"},
                "tool_name": {"type": "keyword"},
                "outcome": {"type": "keyword"},
                "summary": {"type": "text"},
                "created_at": {"type": "date"},
                VECTOR_FIELD: {
                    "type": "knn_vector",
                    "dimension": manifest.dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",  # nmslib is deprecated; Serverless NextGen maps it to faiss anyway
                        "space_type": "cosinesimil",
                        "parameters": {"ef_construction": 128, "m": 16},
                    },
                },
            },
        },
    }


def mapped_manifest(mapping: dict[str, Any]) -> ScratchManifest | None:
    """The manifest an existing index declares: `_meta` for the embedder, the knn_vector for the dimension."""
    mappings = mapping.get("mappings", mapping)
    field = (mappings.get("properties") or {}).get(VECTOR_FIELD) or {}
    meta = mappings.get("_meta") or {}
    if field.get("type") != "knn_vector":
        return None
    return ScratchManifest(
        embedder_id=str(meta.get("embedder_id", "unknown")), dimension=int(field["dimension"])
    )


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def cosine_from_score(score: float) -> float:
    """k-NN `cosinesimil` scores are (1 + cosine) / 2."""
    return 2.0 * float(score) - 1.0


class OpenSearchScratchStore(ScratchStore):
    def __init__(self, client: Any, index: str) -> None:
        self.client = client
        self.index = index
        self._manifest: ScratchManifest | None = None

    @property
    def index_name(self) -> str:
        return f"opensearch:{self.index}"

    def _stored_manifest(self) -> ScratchManifest | None:
        if self._manifest is None and self.client.indices.exists(index=self.index):
            found = self.client.indices.get_mapping(index=self.index)
            stored = mapped_manifest(found.get(self.index, next(iter(found.values()), {})))
            # an index without our knn_vector field: a parity error naming it, never a silent write
            self._manifest = stored or ScratchManifest(embedder_id="no knn_vector field", dimension=0)
        return self._manifest

    def _record_manifest(self, manifest: ScratchManifest) -> ScratchManifest:
        stored = self._stored_manifest()
        if stored is not None:
            return stored
        self.client.indices.create(index=self.index, body=scratch_mapping(manifest))  # the indexer's right
        stored = self._stored_manifest()
        if stored is None:
            raise ParityError(f"the scratch index {self.index_name} was created but cannot be read back")
        return stored

    def _write(self, records: Sequence[ScratchRecord], vectors: np.ndarray) -> int:
        known = self.known_ids(records[0].tenant_id, [r.record_id for r in records]) if records else set()
        fresh = [(r, vectors[i]) for i, r in enumerate(records) if r.record_id not in known]
        for start in range(0, len(fresh), BULK_DOCS):
            lines: list[dict[str, Any]] = []
            for record, vector in fresh[start : start + BULK_DOCS]:
                lines.append({"index": {"_index": self.index}})  # no _id: the collection assigns it
                lines.append(
                    {
                        "record_id": record.record_id,
                        "tenant_id": record.tenant_id,
                        "session_id": record.session_id,
                        "tool_name": record.tool_name,
                        "outcome": record.outcome.value,
                        "summary": record.summary,
                        "created_at": _iso(record.created_at),
                        VECTOR_FIELD: [float(x) for x in vector],
                    }
                )
            answer = self.client.bulk(body=lines)
            if answer.get("errors"):
                reasons = [
                    str(next(iter(item.values())).get("error"))
                    for item in answer.get("items", [])
                    if next(iter(item.values())).get("error")
                ]
                raise RuntimeError(f"OpenSearch refused scratch records: {reasons[:3]}")
        return len(fresh)

    def _nearest(self, tenant_id: str, vector: np.ndarray, k: int, not_before: datetime) -> list[ScratchHit]:
        tenant_filter = {"term": {"tenant_id": tenant_id}}
        fresh_filter = {"range": {"created_at": {"gte": _iso(not_before)}}}
        body = {
            "size": k,
            "query": {
                "bool": {
                    "filter": [tenant_filter, fresh_filter],
                    "must": [
                        {
                            "knn": {
                                VECTOR_FIELD: {
                                    "vector": [float(x) for x in vector],
                                    "k": k,
                                    "filter": {"bool": {"filter": [tenant_filter, fresh_filter]}},
                                }
                            }
                        }
                    ],
                }
            },
            "_source": SOURCE_FIELDS,
        }
        answer = self.client.search(index=self.index, body=body)
        hits: list[ScratchHit] = []
        seen: set[str] = set()
        for hit in answer.get("hits", {}).get("hits", []):
            source = hit.get("_source") or {}
            if source.get("record_id") in seen:  # eventual consistency: a record written twice
                continue
            seen.add(str(source.get("record_id")))
            hits.append(
                ScratchHit(
                    record=ScratchRecord(
                        tenant_id=source["tenant_id"],
                        session_id=source["session_id"],
                        tool_name=source["tool_name"],
                        outcome=ToolOutcome(source["outcome"]),
                        summary=source["summary"],
                        created_at=_parse_time(source["created_at"]),
                    ),
                    similarity=cosine_from_score(hit.get("_score") or 0.0),
                )
            )
        return hits

    def known_ids(self, tenant_id: str, record_ids: Sequence[str]) -> set[str]:
        if not record_ids:
            return set()
        body = {
            "size": len(record_ids),
            "query": {
                "bool": {
                    "filter": [{"term": {"tenant_id": tenant_id}}, {"terms": {"record_id": list(record_ids)}}]
                }
            },
            "_source": ["record_id"],
        }
        answer = self.client.search(index=self.index, body=body)
        return {
            str((h.get("_source") or {}).get("record_id")) for h in answer.get("hits", {}).get("hits", [])
        }

    def _delete_matching(self, filters: list[dict[str, Any]]) -> int:
        """Find the server's ids by query and delete them with bulk `delete` actions, page by page."""
        removed = 0
        deleted: set[str] = set()  # a delete becomes visible to search only after the collection refreshes
        while True:
            body = {"size": PAGE, "query": {"bool": {"filter": filters}}, "_source": False}
            found = [h["_id"] for h in self.client.search(index=self.index, body=body)["hits"]["hits"]]
            ids = [i for i in found if i not in deleted]
            if not ids:
                return removed
            deleted.update(ids)
            answer = self.client.bulk(body=[{"delete": {"_index": self.index, "_id": i}} for i in ids])
            removed += sum(
                1 for item in answer.get("items", []) if item.get("delete", {}).get("status") in (200, 404)
            )
            if len(ids) < PAGE:
                return removed

    def sweep(self, before: datetime, after: datetime | None = None) -> int:
        if not self.client.indices.exists(index=self.index):
            return 0
        outside: list[dict[str, Any]] = [{"range": {"created_at": {"lt": _iso(before)}}}]
        if after is not None:
            outside.append({"range": {"created_at": {"gt": _iso(after)}}})
        return self._delete_matching([{"bool": {"should": outside, "minimum_should_match": 1}}])

    def delete_session(self, tenant_id: str, session_id: str) -> int:
        if not self.client.indices.exists(index=self.index):
            return 0
        return self._delete_matching(
            [{"term": {"tenant_id": tenant_id}}, {"term": {"session_id": session_id}}]
        )

    def count(self, tenant_id: str | None = None) -> int:
        if not self.client.indices.exists(index=self.index):
            return 0
        query: dict[str, Any] = (
            {"match_all": {}}
            if tenant_id is None
            else {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}}
        )
        return int(self.client.count(index=self.index, body={"query": query})["count"])
