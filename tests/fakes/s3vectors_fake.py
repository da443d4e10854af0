"""An in-process S3 Vectors client: boto3's method names, parameters and response shapes, with the
documented limits enforced (moto enforces none and has no query_vectors).

Every call is first validated against the real botocore service model (required parameters, types,
minimums: a wrong name or shape raises botocore's ParamValidationError exactly as boto3 would), then
against the service limits botocore does not check, raising ClientError with the service's error codes:

- data calls name the index by vectorBucketName+indexName OR indexArn, never both
- put_vectors/delete_vectors 1-500, get_vectors 1-100 keys, list_vectors maxResults ≤ 1000, segmentCount ≤ 16
- query_vectors: topK 1-100; queryTexts 1-10, each ≤ 1024 characters on a distinct key configured for
  full-text search, ENHANCED indexes only; queryMode CLASSIC rejected on ENHANCED indexes
- keys 1-1024 characters, unique within a request; vectors float32 of the index dimension, finite, not
  all-zero for cosine
- metadata ≤ 40 KB total, filterable part ≤ 2 KB (compact UTF-8 JSON), ≤ 50 keys, values string / number /
  boolean / list of those; ≤ 10 non-filterable keys fixed at create_index
- filters: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or; non-filterable keys cannot be filtered

Search is exact: cosine distance = 1 − cosine similarity (float32 storage), BM25 (k1=1.2, b=0.75) over
full-text keys, and hybrid results fused with Reciprocal Rank Fusion (k=60) over each list's top K.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from botocore.exceptions import ClientError
from botocore.session import get_session
from botocore.validate import validate_parameters

from .s3vectors_filter import FilterError, matches

MAX_PUT = 500
MAX_GET = 100
MAX_TOP_K = 100
MAX_LIST = 1000
MAX_SEGMENTS = 16
MAX_KEY_CHARS = 1024
MAX_TOTAL_METADATA = 40 * 1024
MAX_FILTERABLE_METADATA = 2 * 1024
MAX_METADATA_KEYS = 50
MAX_NON_FILTERABLE_KEYS = 10
MAX_QUERY_TEXT_CHARS = 1024
RRF_K = 60
_SERVICE_MODEL = get_session().get_service_model("s3vectors")
_WORD_RE = re.compile(r"\w+", re.UNICODE)


def _error(operation: str, code: str, message: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}},
        operation,
    )


def json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _WORD_RE.findall(text)]


@dataclass
class _Index:
    bucket: str
    name: str
    arn: str
    dimension: int
    metric: str
    non_filterable: tuple[str, ...]
    text_keys: dict[str, str]  # metadataKey -> language
    mode: str
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    vectors: dict[str, tuple[np.ndarray, dict[str, Any]]] = field(default_factory=dict)


class FakeS3VectorsClient:
    """Same calls as `boto3.client("s3vectors")`; `calls` records (operation, params) for assertions."""

    def __init__(self, region: str = "us-east-1", account: str = "123456789012") -> None:
        self.region = region
        self.account = account
        self.buckets: dict[str, dict[str, Any]] = {}
        self.indexes: dict[tuple[str, str], _Index] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    # ------------------------------------------------------------ plumbing

    def _validate(self, api_name: str, params: dict[str, Any]) -> None:
        validate_parameters(params, _SERVICE_MODEL.operation_model(api_name).input_shape)
        self.calls.append((api_name, params))

    def _bucket_arn(self, name: str) -> str:
        return f"arn:aws:s3vectors:{self.region}:{self.account}:bucket/{name}"

    def _index(self, op: str, params: dict[str, Any]) -> _Index:
        by_name = "vectorBucketName" in params or "indexName" in params
        if by_name == ("indexArn" in params):
            raise _error(
                op, "ValidationException", "name the index by vectorBucketName and indexName, or by indexArn"
            )
        if "indexArn" in params:
            match = re.fullmatch(
                r"arn:aws[-a-z0-9]*:s3vectors:[^:]+:\d{12}:bucket/([^/]+)/index/(.+)", params["indexArn"]
            )
            if not match:
                raise _error(op, "ValidationException", "invalid indexArn")
            key = (match.group(1), match.group(2))
        else:
            if "vectorBucketName" not in params or "indexName" not in params:
                raise _error(op, "ValidationException", "both vectorBucketName and indexName are required")
            key = (params["vectorBucketName"], params["indexName"])
        if key[0] not in self.buckets:
            raise _error(op, "NotFoundException", f"vector bucket {key[0]} not found", 404)
        if key not in self.indexes:
            raise _error(op, "NotFoundException", f"index {key[1]} not found", 404)
        return self.indexes[key]

    # ------------------------------------------------------------ control plane

    def create_vector_bucket(self, **params: Any) -> dict[str, Any]:
        self._validate("CreateVectorBucket", params)
        name = params["vectorBucketName"]
        if name in self.buckets:
            raise _error("CreateVectorBucket", "ConflictException", f"vector bucket {name} exists", 409)
        self.buckets[name] = {
            "defaultIndexMode": "CLASSIC",
            "encryption": params.get("encryptionConfiguration"),
        }
        return {"vectorBucketArn": self._bucket_arn(name)}

    def put_vector_bucket_default_index_mode(self, **params: Any) -> dict[str, Any]:
        self._validate("PutVectorBucketDefaultIndexMode", params)
        name = params.get("vectorBucketName") or str(params.get("vectorBucketArn", "")).rsplit("/", 1)[-1]
        if name not in self.buckets:
            raise _error(
                "PutVectorBucketDefaultIndexMode", "NotFoundException", f"bucket {name} not found", 404
            )
        if params["defaultIndexMode"] not in ("CLASSIC", "ENHANCED"):
            raise _error(
                "PutVectorBucketDefaultIndexMode", "ValidationException", "mode is CLASSIC or ENHANCED"
            )
        self.buckets[name]["defaultIndexMode"] = params["defaultIndexMode"]
        return {}

    def create_index(self, **params: Any) -> dict[str, Any]:
        op = "CreateIndex"
        self._validate(op, params)
        bucket = params.get("vectorBucketName") or str(params.get("vectorBucketArn", "")).rsplit("/", 1)[-1]
        if bucket not in self.buckets:
            raise _error(op, "NotFoundException", f"vector bucket {bucket} not found", 404)
        name = params["indexName"]
        if (bucket, name) in self.indexes:
            raise _error(op, "ConflictException", f"index {name} exists", 409)
        if params["dataType"] != "float32" or params["distanceMetric"] not in ("cosine", "euclidean"):
            raise _error(op, "ValidationException", "dataType float32; distanceMetric cosine or euclidean")
        if not 1 <= params["dimension"] <= 4096:
            raise _error(op, "ValidationException", "dimension must be 1-4096")
        config = params.get("metadataConfiguration") or {}
        non_filterable = tuple(config.get("nonFilterableMetadataKeys", []))
        if len(non_filterable) > MAX_NON_FILTERABLE_KEYS or len(set(non_filterable)) != len(non_filterable):
            raise _error(
                op, "ValidationException", f"at most {MAX_NON_FILTERABLE_KEYS} distinct non-filterable keys"
            )
        text_configs = config.get("textSearchConfigurations", [])
        mode = self.buckets[bucket]["defaultIndexMode"]
        if text_configs and mode != "ENHANCED":
            raise _error(op, "ValidationException", "full-text search needs an ENHANCED index")
        if len(text_configs) > 10:
            raise _error(op, "ValidationException", "at most 10 textSearchConfigurations")
        arn = f"{self._bucket_arn(bucket)}/index/{name}"
        self.indexes[(bucket, name)] = _Index(
            bucket=bucket,
            name=name,
            arn=arn,
            dimension=params["dimension"],
            metric=params["distanceMetric"],
            non_filterable=non_filterable,
            text_keys={c["metadataKey"]: c.get("language", "en") for c in text_configs},
            mode=mode,
        )
        return {"indexArn": arn}

    def get_index(self, **params: Any) -> dict[str, Any]:
        self._validate("GetIndex", params)
        index = self._index("GetIndex", params)
        config: dict[str, Any] = {}
        if index.non_filterable:
            config["nonFilterableMetadataKeys"] = list(index.non_filterable)
        if index.text_keys:
            config["textSearchConfigurations"] = [
                {"metadataKey": k, "language": lang, "status": "ACTIVE"}
                for k, lang in index.text_keys.items()
            ]
        return {
            "index": {
                "vectorBucketName": index.bucket,
                "indexName": index.name,
                "indexArn": index.arn,
                "creationTime": index.created,
                "dataType": "float32",
                "dimension": index.dimension,
                "distanceMetric": index.metric,
                "metadataConfiguration": config,
                "indexMode": index.mode,
            }
        }

    # ------------------------------------------------------------ checks

    def _check_vector(self, op: str, index: _Index, data: Any, what: str) -> np.ndarray:
        values = (data or {}).get("float32")
        if not isinstance(values, list) or len(values) != index.dimension:
            got = len(values) if isinstance(values, list) else 0
            raise _error(
                op,
                "ValidationException",
                f"{what}: dimension {got} does not match the index ({index.dimension})",
            )
        array = np.asarray(values, dtype=np.float32)
        if not np.all(np.isfinite(array)):
            raise _error(op, "ValidationException", f"{what}: NaN and Infinity are not allowed")
        if index.metric == "cosine" and not np.any(array):
            raise _error(
                op, "ValidationException", f"{what}: all-zero vectors are not allowed with cosine distance"
            )
        return array

    def _check_metadata(self, op: str, index: _Index, key: str, metadata: Any) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, dict):
            raise _error(op, "ValidationException", f"metadata of {key} must be an object")
        if len(metadata) > MAX_METADATA_KEYS:
            raise _error(
                op, "ValidationException", f"metadata of {key} has more than {MAX_METADATA_KEYS} keys"
            )
        for name, value in metadata.items():
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(v, str | bool | int | float) for v in items):
                raise _error(
                    op, "ValidationException", f"metadata {name} of {key}: string, number, boolean or array"
                )
        if json_size(metadata) > MAX_TOTAL_METADATA:
            raise _error(
                op, "ValidationException", f"metadata of {key} is {json_size(metadata)} bytes, over 40 KB"
            )
        filterable = {k: v for k, v in metadata.items() if k not in index.non_filterable}
        if json_size(filterable) > MAX_FILTERABLE_METADATA:
            raise _error(
                op,
                "ValidationException",
                f"filterable metadata of {key} is {json_size(filterable)} bytes, over 2 KB",
            )
        return json.loads(json.dumps(metadata))  # stored as a copy, like the service

    @staticmethod
    def _check_key(op: str, key: Any) -> str:
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
            raise _error(op, "ValidationException", f"vector keys are 1-{MAX_KEY_CHARS} characters")
        return key

    # ------------------------------------------------------------ data plane

    def put_vectors(self, **params: Any) -> dict[str, Any]:
        op = "PutVectors"
        self._validate(op, params)
        index = self._index(op, params)
        vectors = params["vectors"]
        if not 1 <= len(vectors) <= MAX_PUT:
            raise _error(
                op, "ValidationException", f"put 1-{MAX_PUT} vectors per request, got {len(vectors)}"
            )
        keys = [self._check_key(op, v.get("key")) for v in vectors]
        if len(set(keys)) != len(keys):
            raise _error(op, "ValidationException", "duplicate keys in one request")
        staged = {
            v["key"]: (
                self._check_vector(op, index, v.get("data"), v["key"]),
                self._check_metadata(op, index, v["key"], v.get("metadata")),
            )
            for v in vectors
        }
        index.vectors.update(staged)  # all or nothing; an existing key is overwritten
        return {}

    def get_vectors(self, **params: Any) -> dict[str, Any]:
        op = "GetVectors"
        self._validate(op, params)
        index = self._index(op, params)
        keys = params["keys"]
        if not 1 <= len(keys) <= MAX_GET:
            raise _error(op, "ValidationException", f"get 1-{MAX_GET} keys per request, got {len(keys)}")
        found = [
            self._render(index, k, params.get("returnData", False), params.get("returnMetadata", False))
            for k in (self._check_key(op, k) for k in keys)
            if k in index.vectors
        ]
        return {"vectors": found}

    def delete_vectors(self, **params: Any) -> dict[str, Any]:
        op = "DeleteVectors"
        self._validate(op, params)
        index = self._index(op, params)
        keys = params["keys"]
        if not 1 <= len(keys) <= MAX_PUT:
            raise _error(op, "ValidationException", f"delete 1-{MAX_PUT} keys per request, got {len(keys)}")
        for key in keys:
            index.vectors.pop(self._check_key(op, key), None)
        return {}

    def list_vectors(self, **params: Any) -> dict[str, Any]:
        op = "ListVectors"
        self._validate(op, params)
        index = self._index(op, params)
        limit = params.get("maxResults", 500)
        segments = params.get("segmentCount")
        if limit > MAX_LIST or (segments is not None and segments > MAX_SEGMENTS):
            raise _error(op, "ValidationException", f"maxResults ≤ {MAX_LIST}, segmentCount ≤ {MAX_SEGMENTS}")
        if (segments is None) != ("segmentIndex" not in params) or (
            segments is not None and params["segmentIndex"] >= segments
        ):
            raise _error(
                op, "ValidationException", "segmentCount and segmentIndex go together, index < count"
            )
        keys = sorted(index.vectors)
        if segments is not None:
            keys = [k for k in keys if zlib.crc32(k.encode()) % segments == params["segmentIndex"]]
        start = int(params.get("nextToken", "0") or 0)
        page = keys[start : start + limit]
        response: dict[str, Any] = {
            "vectors": [
                self._render(index, k, params.get("returnData", False), params.get("returnMetadata", False))
                for k in page
            ]
        }
        if start + limit < len(keys):
            response["nextToken"] = str(start + limit)
        return response

    def _render(self, index: _Index, key: str, data: bool, metadata: bool) -> dict[str, Any]:
        vector, meta = index.vectors[key]
        out: dict[str, Any] = {"key": key}
        if data:
            out["data"] = {"float32": [float(x) for x in vector]}
        if metadata:
            out["metadata"] = json.loads(json.dumps(meta))
        return out

    def query_vectors(self, **params: Any) -> dict[str, Any]:
        op = "QueryVectors"
        self._validate(op, params)
        index = self._index(op, params)
        top_k = params["topK"]
        if not 1 <= top_k <= MAX_TOP_K:
            raise _error(op, "ValidationException", f"topK must be 1-{MAX_TOP_K}, got {top_k}")
        if params.get("queryMode") == "CLASSIC" and index.mode == "ENHANCED":
            raise _error(op, "ValidationException", "CLASSIC query mode cannot be used on an ENHANCED index")
        texts = params.get("queryTexts") or []
        if "queryVector" not in params and not texts:
            raise _error(op, "ValidationException", "queryVector, queryTexts or both are required")
        if texts:
            if index.mode != "ENHANCED":
                raise _error(op, "ValidationException", "full-text and hybrid search need an ENHANCED index")
            text_keys = [t["metadataKey"] for t in texts]
            if len(set(text_keys)) != len(text_keys) or not set(text_keys) <= set(index.text_keys):
                raise _error(
                    op, "ValidationException", f"queryTexts keys must be distinct and searchable: {text_keys}"
                )
            if any(len(t["text"]) > MAX_QUERY_TEXT_CHARS or not t["text"].strip() for t in texts):
                raise _error(
                    op, "ValidationException", f"each query text is 1-{MAX_QUERY_TEXT_CHARS} characters"
                )
        flt = params.get("filter")
        try:
            candidates = [
                k
                for k, (_, m) in index.vectors.items()
                if flt is None or matches(flt, m, index.non_filterable)
            ]
        except FilterError as exc:
            raise _error(op, "ValidationException", f"invalid filter: {exc}") from exc

        distances: dict[str, float] = {}
        if "queryVector" in params:
            query = self._check_vector(op, index, params["queryVector"], "queryVector")
            for key in candidates:
                distances[key] = self._distance(index, query, index.vectors[key][0])
        vector_ranked = sorted(distances, key=lambda k: (distances[k], k))[:top_k]
        bm25 = self._bm25(index, candidates, texts)
        text_ranked = sorted(
            (k for k in bm25 if sum(bm25[k].values()) > 0), key=lambda k: (-sum(bm25[k].values()), k)
        )[:top_k]

        hybrid = bool(texts) and "queryVector" in params
        if hybrid:
            fused: dict[str, float] = {}
            for ranking in (vector_ranked, text_ranked):
                for rank, key in enumerate(ranking, start=1):
                    fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
            ordered = sorted(fused, key=lambda k: (-fused[k], k))[:top_k]
        else:
            ordered = vector_ranked if not texts else text_ranked
        results = []
        for key in ordered:
            out: dict[str, Any] = {"key": key}
            if params.get("returnDistance") and not texts:
                out["distance"] = distances[key]
            if params.get("returnMetadata"):
                out["metadata"] = json.loads(json.dumps(index.vectors[key][1]))
            if params.get("returnScores") and texts:
                scores: dict[str, Any] = {
                    "bm25Scores": [
                        {"metadataKey": mk, "score": s} for mk, s in bm25.get(key, {}).items() if s > 0
                    ]
                }
                if hybrid:
                    scores["fused"] = fused[key]
                    if key in vector_ranked:
                        scores["vectorDistance"] = distances[key]
                out["scores"] = scores
            results.append(out)
        return {"vectors": results, "distanceMetric": index.metric}

    @staticmethod
    def _distance(index: _Index, query: np.ndarray, stored: np.ndarray) -> float:
        if index.metric == "euclidean":
            return float(np.linalg.norm(query - stored))
        cosine = float(query @ stored) / float(np.linalg.norm(query) * np.linalg.norm(stored))
        return 1.0 - cosine

    @staticmethod
    def _bm25(
        index: _Index, candidates: list[str], texts: list[dict[str, str]]
    ) -> dict[str, dict[str, float]]:
        scores: dict[str, dict[str, float]] = {}
        for query_text in texts:
            key_name = query_text["metadataKey"]
            docs = {k: _tokens(str(index.vectors[k][1].get(key_name, ""))) for k in candidates}
            docs = {k: toks for k, toks in docs.items() if toks}
            if not docs:
                continue
            average = sum(len(t) for t in docs.values()) / len(docs)
            frequency = Counter(term for toks in docs.values() for term in set(toks))
            for key, toks in docs.items():
                counts = Counter(toks)
                score = 0.0
                for term in set(_tokens(query_text["text"])):
                    if term not in counts:
                        continue
                    idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
                    tf = counts[term]
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(toks) / average))
                scores.setdefault(key, {})[key_name] = score
        return scores


def make_index(
    client: FakeS3VectorsClient,
    bucket: str = "episodic-vectors",
    index: str = "episodes",
    dimension: int = 1024,
    *,
    mode: str = "ENHANCED",
    non_filterable: tuple[str, ...] = ("record", "text"),
    text_keys: tuple[str, ...] = ("text",),
) -> str:
    """Create a bucket (if needed) and an index laid out like the deployed one; returns the index ARN."""
    if bucket not in client.buckets:
        client.create_vector_bucket(vectorBucketName=bucket)
    client.put_vector_bucket_default_index_mode(vectorBucketName=bucket, defaultIndexMode=mode)
    config: dict[str, Any] = {"nonFilterableMetadataKeys": list(non_filterable)}
    if mode == "ENHANCED" and text_keys:
        config["textSearchConfigurations"] = [{"metadataKey": k, "language": "en"} for k in text_keys]
    return str(
        client.create_index(
            vectorBucketName=bucket,
            indexName=index,
            dataType="float32",
            dimension=dimension,
            distanceMetric="cosine",
            metadataConfiguration=config,
        )["indexArn"]
    )
