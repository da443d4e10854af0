"""An in-process OpenSearch Serverless (VECTORSEARCH collection) client: opensearch-py's method names and
response shapes, with the documented k-NN mapping and query limits enforced, raising the client's own
exception types (`RequestError` 400, `NotFoundError` 404) as the real client does:

- mappings: a `knn_vector` field needs `settings.index.knn: true`; dimension 1-16,000; method `hnsw`;
  engine faiss | nmslib | lucene; space_type l2 | cosinesimil | innerproduct | l1 | linf; index names
  lower case; creating an existing index is `resource_already_exists_exception`
- documents: a vector collection assigns document ids, so an `index`/`create` action carrying `_id` is
  refused; a vector of another dimension, NaN/Inf, or all zeros with cosinesimil is refused; `refresh`
  is not accepted (Serverless refreshes on its own)
- k-NN queries: only on a `knn_vector` field, vector of the mapped dimension, `k` 1-10,000; `size` and
  `from + size` at most 10,000 (index.max_result_window); `term`/`terms` only on keyword fields
- query DSL evaluated: bool (filter / must / should / must_not), term, terms, range (gte/gt/lte/lt on dates
  and numbers), match_all, match (BM25, k1 1.2, b 0.75, lower-cased word tokens), knn (+ its filter)

k-NN is exact here (real HNSW is approximate: assert order, not scores); cosinesimil scores are (1+cos)/2.
Every call is recorded in `calls` (name, kwargs) for request-shape assertions.
"""

from __future__ import annotations

import copy
import math
import re
import uuid
from collections import Counter
from datetime import datetime
from typing import Any

import numpy as np
from opensearchpy.exceptions import NotFoundError, RequestError

MAX_DIMENSION = 16_000
MAX_K = 10_000
MAX_RESULT_WINDOW = 10_000
ENGINES = {"faiss", "nmslib", "lucene"}
SPACES = {"l2", "cosinesimil", "innerproduct", "l1", "linf"}
_WORD_RE = re.compile(r"\w+")


def _bad(reason: str, kind: str = "illegal_argument_exception") -> RequestError:
    cause = {"type": kind, "reason": reason}
    return RequestError(400, kind, {"error": {**cause, "root_cause": [cause]}, "status": 400})


def _time(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


class _Index:
    def __init__(self, name: str, body: dict[str, Any]) -> None:
        self.name = name
        self.settings = body.get("settings") or {}
        self.mappings = body.get("mappings") or {}
        self.docs: dict[str, dict[str, Any]] = {}
        self.properties: dict[str, Any] = self.mappings.get("properties") or {}
        knn_on = bool((self.settings.get("index") or {}).get("knn") or self.settings.get("index.knn"))
        for field, spec in self.properties.items():
            if spec.get("type") != "knn_vector":
                continue
            if not knn_on:
                raise _bad(
                    f"field [{field}] is knn_vector but index.knn is not true", "mapper_parsing_exception"
                )
            dimension = spec.get("dimension")
            if not isinstance(dimension, int) or not 1 <= dimension <= MAX_DIMENSION:
                raise _bad(f"dimension {dimension!r} must be 1-{MAX_DIMENSION}", "mapper_parsing_exception")
            method = spec.get("method") or {}
            if method.get("name", "hnsw") != "hnsw" or method.get("engine", "faiss") not in ENGINES:
                raise _bad(f"unsupported k-NN method {method}", "mapper_parsing_exception")
            if method.get("space_type", "l2") not in SPACES:
                raise _bad(f"unsupported space_type {method.get('space_type')}", "mapper_parsing_exception")

    def kind(self, field: str) -> str:
        return str((self.properties.get(field) or {}).get("type", ""))

    def check_doc(self, doc: dict[str, Any]) -> None:
        for field, spec in self.properties.items():
            if spec.get("type") != "knn_vector" or field not in doc:
                continue
            vector = np.asarray(doc[field], dtype=np.float64)
            if vector.shape != (spec["dimension"],):
                raise _bad(f"Vector dimension mismatch. Expected: {spec['dimension']}, Given: {vector.size}")
            if not np.all(np.isfinite(vector)):
                raise _bad("KNN vector values cannot be NaN or Infinity")
            space = (spec.get("method") or {}).get("space_type", "l2")
            if space == "cosinesimil" and not np.any(vector):
                raise _bad("zero vector is not supported when space type is [cosinesimil]")


class _Indices:
    def __init__(self, fake: FakeOpenSearch) -> None:
        self.fake = fake

    def exists(self, index: str, **kwargs: Any) -> bool:
        self.fake.record("indices.exists", index=index, **kwargs)
        return index in self.fake.indexes

    def create(self, index: str, body: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        self.fake.record("indices.create", index=index, body=body, **kwargs)
        if index != index.lower() or not index:
            raise _bad(f"Invalid index name [{index}], must be lowercase", "invalid_index_name_exception")
        if index in self.fake.indexes:
            raise _bad(f"index [{index}] already exists", "resource_already_exists_exception")
        self.fake.indexes[index] = _Index(index, copy.deepcopy(body or {}))
        return {"acknowledged": True, "index": index}

    def get_mapping(self, index: str, **kwargs: Any) -> dict[str, Any]:
        self.fake.record("indices.get_mapping", index=index, **kwargs)
        return {index: {"mappings": copy.deepcopy(self.fake.get(index).mappings)}}


class FakeOpenSearch:
    def __init__(self) -> None:
        self.indexes: dict[str, _Index] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.indices = _Indices(self)
        self.fail_with: Exception | None = None  # set to make every data call raise (degrade tests)

    def record(self, name: str, **kwargs: Any) -> None:
        if "refresh" in kwargs or "refresh" in (kwargs.get("params") or {}):
            raise _bad("refresh is not supported by OpenSearch Serverless")
        self.calls.append((name, copy.deepcopy(kwargs)))
        if self.fail_with is not None and name in ("search", "msearch", "bulk", "count"):
            raise self.fail_with

    def get(self, index: str) -> _Index:
        if index not in self.indexes:
            raise NotFoundError(
                404, "index_not_found_exception", {"error": {"reason": f"no such index [{index}]"}}
            )
        return self.indexes[index]

    # ------------------------------------------------------------ documents

    def bulk(self, body: list[dict[str, Any]], index: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.record("bulk", body=body, index=index, **kwargs)
        items: list[dict[str, Any]] = []
        lines = iter(body)
        for action in lines:
            ((verb, meta),) = action.items()
            target = self.get(meta.get("_index") or index or "")
            if verb in ("index", "create"):
                doc = next(lines)
                if "_id" in meta:
                    raise _bad("Document ID is not supported in create/index operation request")
                target.check_doc(doc)
                doc_id = uuid.uuid4().hex[:20]
                target.docs[doc_id] = copy.deepcopy(doc)
                items.append({verb: {"_index": target.name, "_id": doc_id, "status": 201}})
            elif verb == "delete":
                found = target.docs.pop(meta["_id"], None)
                items.append(
                    {"delete": {"_index": target.name, "_id": meta["_id"], "status": 200 if found else 404}}
                )
            else:
                raise _bad(f"unsupported bulk action {verb}")
        return {"took": 1, "errors": False, "items": items}

    # ------------------------------------------------------------ queries

    def count(self, index: str, body: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        self.record("count", index=index, body=body, **kwargs)
        target = self.get(index)
        query = (body or {}).get("query") or {"match_all": {}}
        self._check_terms(target, query)
        return {"count": sum(1 for d in target.docs.values() if self._score(target, query, d) is not None)}

    def search(self, index: str, body: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        self.record("search", index=index, body=body, **kwargs)
        return self._search(index, body)

    def _search(self, index: str, body: dict[str, Any] | None) -> dict[str, Any]:
        target = self.get(index)
        body = body or {}
        size, start = int(body.get("size", 10)), int(body.get("from", 0))
        if size > MAX_RESULT_WINDOW or start + size > MAX_RESULT_WINDOW:
            raise _bad(f"Result window is too large, from + size must be <= {MAX_RESULT_WINDOW}")
        query = body.get("query") or {"match_all": {}}
        self._check_terms(target, query)
        self._knn_pool = self._knn_candidates(target, query)
        scored = []
        for doc_id, doc in target.docs.items():
            score = self._score(target, query, doc, doc_id)
            if score is not None:
                scored.append((score, doc_id))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        wanted = body.get("_source", True)
        hits = []
        for score, doc_id in scored[start : start + size]:
            hit: dict[str, Any] = {"_index": index, "_id": doc_id, "_score": score}
            if wanted is not False:
                source = target.docs[doc_id]
                hit["_source"] = (
                    {k: source[k] for k in wanted if k in source}
                    if isinstance(wanted, list)
                    else dict(source)
                )
            hits.append(hit)
        return {"took": 1, "hits": {"total": {"value": len(scored), "relation": "eq"}, "hits": hits}}

    def msearch(self, body: list[dict[str, Any]], index: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Header/body pairs, each answered like `search` (an error answers that search alone)."""
        self.record("msearch", body=body, index=index, **kwargs)
        responses: list[dict[str, Any]] = []
        for header, search in zip(body[0::2], body[1::2], strict=True):
            try:
                responses.append(self._search(header.get("index") or index or "", search))
            except RequestError as exc:
                responses.append({"error": exc.info.get("error"), "status": 400})
        return {"took": 1, "responses": responses}

    def _knn_candidates(self, target: _Index, query: dict[str, Any]) -> dict[str, dict[str, float]]:
        """Per knn clause (by id of its dict): the top-k documents and their scores, the filter applied."""
        pools: dict[str, dict[str, float]] = {}
        for clause in _walk_knn(query):
            ((field, spec),) = clause.items()
            if target.kind(field) != "knn_vector":
                raise _bad(f"Field '{field}' is not knn_vector type.", "query_shard_exception")
            k = spec.get("k")
            if not isinstance(k, int) or not 1 <= k <= MAX_K:
                raise _bad(f"[knn] requires k between 1 and {MAX_K}, got {k!r}", "parsing_exception")
            mapping = target.properties[field]
            vector = np.asarray(spec.get("vector"), dtype=np.float64)
            if vector.shape != (mapping["dimension"],):
                raise _bad(
                    f"Query vector has invalid dimension: {vector.size}. Dimension should be: {mapping['dimension']}"
                )
            space = (mapping.get("method") or {}).get("space_type", "l2")
            if space == "cosinesimil" and not np.any(vector):
                raise _bad("zero vector is not supported when space type is [cosinesimil]")
            scored = []
            for doc_id, doc in target.docs.items():
                if field not in doc:
                    continue
                if spec.get("filter") and self._score(target, spec["filter"], doc, doc_id) is None:
                    continue
                stored = np.asarray(doc[field], dtype=np.float64)
                cosine = float(stored @ vector / (np.linalg.norm(stored) * np.linalg.norm(vector)))
                scored.append(
                    (
                        (1.0 + cosine) / 2.0
                        if space == "cosinesimil"
                        else 1 / (1 + np.sum((stored - vector) ** 2)),
                        doc_id,
                    )
                )
            scored.sort(key=lambda pair: (-pair[0], pair[1]))
            pools[str(id(clause))] = {doc_id: score for score, doc_id in scored[:k]}
        return pools

    def _score(
        self, target: _Index, query: dict[str, Any], doc: dict[str, Any], doc_id: str = ""
    ) -> float | None:
        """The query's score for the document, or None when it does not match."""
        ((kind, spec),) = query.items()
        if kind == "match_all":
            return 1.0
        if kind == "term":
            ((field, value),) = spec.items()
            value = value.get("value") if isinstance(value, dict) else value
            self._keyword(target, field)
            return 0.0 if _values(doc.get(field)) & {value} else None
        if kind == "terms":
            ((field, values),) = spec.items()
            self._keyword(target, field)
            return 0.0 if _values(doc.get(field)) & set(values) else None
        if kind == "range":
            ((field, bounds),) = spec.items()
            if field not in doc:
                return None
            value = _time(doc[field])
            checks = {"gte": value.__ge__, "gt": value.__gt__, "lte": value.__le__, "lt": value.__lt__}
            return 0.0 if all(checks[op](_time(b)) for op, b in bounds.items() if op in checks) else None
        if kind == "match":
            ((field, text),) = spec.items()
            text = text.get("query") if isinstance(text, dict) else text
            score = self._bm25(target, field, str(text), doc)
            return score if score > 0 else None
        if kind == "knn":
            return (
                self._knn_pool.get(str(id(query["knn"])), {}).get(doc_id)
                if hasattr(self, "_knn_pool")
                else None
            )
        if kind == "bool":
            total = 0.0
            for clause in spec.get("filter", []) + spec.get("must", []):
                score = self._score(target, clause, doc, doc_id)
                if score is None:
                    return None
                total += score
            if any(self._score(target, c, doc, doc_id) is not None for c in spec.get("must_not", [])):
                return None
            should = [self._score(target, c, doc, doc_id) for c in spec.get("should", [])]
            matched = [s for s in should if s is not None]
            minimum = spec.get("minimum_should_match", 0 if spec.get("filter") or spec.get("must") else 1)
            if should and len(matched) < int(minimum):
                return None
            return total + sum(matched)
        raise _bad(f"unknown query [{kind}]", "parsing_exception")

    def _check_terms(self, target: _Index, query: Any) -> None:
        """term/terms only on keyword fields, anywhere in the query (checked before any document is read)."""
        if isinstance(query, dict):
            for key, value in query.items():
                if key in ("term", "terms") and isinstance(value, dict):
                    for field in value:
                        self._keyword(target, field)
                else:
                    self._check_terms(target, value)
        elif isinstance(query, list):
            for item in query:
                self._check_terms(target, item)

    def _keyword(self, target: _Index, field: str) -> None:
        if target.kind(field) not in ("keyword", ""):
            raise _bad(f"term query on [{field}] of type {target.kind(field)}: use a keyword field")

    def _bm25(self, target: _Index, field: str, text: str, doc: dict[str, Any]) -> float:
        terms = _WORD_RE.findall(text.lower())
        docs = [_WORD_RE.findall(str(d.get(field, "")).lower()) for d in target.docs.values()]
        mine = _WORD_RE.findall(str(doc.get(field, "")).lower())
        if not mine:
            return 0.0
        average = sum(map(len, docs)) / max(len(docs), 1)
        counts = Counter(mine)
        score = 0.0
        for term in set(terms):
            n = sum(1 for d in docs if term in d)
            if not counts[term]:
                continue
            idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            tf = counts[term]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(mine) / max(average, 1e-9)))
        return score


def _values(value: Any) -> set[Any]:
    return set(value) if isinstance(value, list) else {value}


def _walk_knn(query: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(query, dict):
        for key, value in query.items():
            if key == "knn" and isinstance(value, dict):
                found.append(value)
            else:
                found += _walk_knn(value)
    elif isinstance(query, list):
        for item in query:
            found += _walk_knn(item)
    return found
