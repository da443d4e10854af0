"""The S3 Vectors fake enforces the documented limits (so tests against it mean something)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

B, IX = "bucket-one", "index-one"
NAMES = {"vectorBucketName": B, "indexName": IX}


@pytest.fixture()
def fake() -> FakeS3VectorsClient:
    client = FakeS3VectorsClient()
    make_index(client, B, IX, 4)
    return client


def vec(key: str, data: list[float] | None = None, **meta: Any) -> dict[str, Any]:
    return {"key": key, "data": {"float32": data or [1.0, 0.0, 0.0, 0.0]}, "metadata": meta}


def code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


@pytest.mark.parametrize(
    ("vectors", "fragment"),
    [
        ([vec(f"k{i}") for i in range(501)], "1-500"),
        ([vec("k", [0.0, 0.0, 0.0, 0.0])], "all-zero"),
        ([vec("k", [float("nan"), 1.0, 0.0, 0.0])], "NaN"),
        ([vec("k", [1.0, 0.0])], "dimension"),
        ([vec("k" * 1025)], "1-1024"),
        ([vec("a"), vec("a")], "duplicate"),
        ([vec("k", tenant="x" * 2100)], "over 2 KB"),
        ([vec("k", record="x" * 41_000)], "over 40 KB"),
        (
            [{"key": "k", "data": {"float32": [1.0, 0, 0, 0]}, "metadata": {f"m{i}": 1 for i in range(51)}}],
            "50 keys",
        ),
        ([vec("k", nested={"a": 1})], "string, number"),
    ],
)
def test_put_limits(fake: FakeS3VectorsClient, vectors: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(ClientError, match=fragment) as exc:
        fake.put_vectors(**NAMES, vectors=vectors)
    assert code(exc) == "ValidationException"
    assert not fake.indexes[(B, IX)].vectors  # all or nothing


def test_non_filterable_text_may_be_large(fake: FakeS3VectorsClient) -> None:
    fake.put_vectors(**NAMES, vectors=[vec("k", tenant="t", record="x" * 30_000)])
    with pytest.raises(ClientError, match="non-filterable"):
        fake.query_vectors(**NAMES, topK=1, queryVector={"float32": [1, 0, 0, 0]}, filter={"record": "x"})


def test_naming_and_counts(fake: FakeS3VectorsClient) -> None:
    arn = fake.get_index(**NAMES)["index"]["indexArn"]
    with pytest.raises(ClientError, match="or by indexArn"):
        fake.get_vectors(**NAMES, indexArn=arn, keys=["a"])
    fake.put_vectors(indexArn=arn, vectors=[vec("a")])
    assert fake.get_vectors(indexArn=arn, keys=["a", "missing"])["vectors"] == [{"key": "a"}]
    with pytest.raises(ClientError, match="1-100"):
        fake.get_vectors(**NAMES, keys=[f"k{i}" for i in range(101)])
    with pytest.raises(ClientError, match="1-500"):
        fake.delete_vectors(**NAMES, keys=[f"k{i}" for i in range(501)])
    with pytest.raises(ClientError) as exc:
        fake.get_vectors(vectorBucketName=B, indexName="nope", keys=["a"])
    assert code(exc) == "NotFoundException"
    with pytest.raises(ParamValidationError):  # the real service model validates shapes
        fake.put_vectors(**NAMES, vectors=[{"key": "a", "data": [1.0]}])
    with pytest.raises(ParamValidationError):
        fake.query_vectors(**NAMES, topK=0, queryVector={"float32": [1, 0, 0, 0]})


def test_query_limits_and_modes(fake: FakeS3VectorsClient) -> None:
    q = {"float32": [1.0, 0.0, 0.0, 0.0]}
    with pytest.raises(ClientError, match="topK"):
        fake.query_vectors(**NAMES, topK=101, queryVector=q)
    with pytest.raises(ClientError, match="distinct and searchable"):
        fake.query_vectors(
            **NAMES, topK=1, queryVector=q, queryTexts=[{"text": "a", "metadataKey": "record"}]
        )
    with pytest.raises(ClientError, match="1-1024"):
        fake.query_vectors(
            **NAMES, topK=1, queryVector=q, queryTexts=[{"text": "a" * 1025, "metadataKey": "text"}]
        )
    with pytest.raises(ClientError, match="CLASSIC"):
        fake.query_vectors(**NAMES, topK=1, queryVector=q, queryMode="CLASSIC")
    classic = FakeS3VectorsClient()
    make_index(classic, B, IX, 4, mode="CLASSIC")
    with pytest.raises(ClientError, match="ENHANCED"):
        classic.query_vectors(
            **NAMES, topK=1, queryVector=q, queryTexts=[{"text": "a", "metadataKey": "text"}]
        )


def test_filters_and_ranking(fake: FakeS3VectorsClient) -> None:
    fake.put_vectors(
        **NAMES,
        vectors=[
            vec("a", [1, 0, 0, 0], tenant="t", tags=["go", "grpc"], ts=100, text="grpc deadline exceeded"),
            vec("b", [0.9, 0.1, 0, 0], tenant="t", tags=["python"], ts=200, text="pytest fixture leak"),
            vec("c", [0, 1, 0, 0], tenant="u", tags=["go"], ts=300, text="grpc deadline"),
        ],
    )
    q = {"float32": [1.0, 0.0, 0.0, 0.0]}

    def keys(flt: dict[str, Any], **extra: Any) -> list[str]:
        return [
            v["key"]
            for v in fake.query_vectors(**NAMES, topK=10, queryVector=q, filter=flt, **extra)["vectors"]
        ]

    assert keys({"tenant": "t"}) == ["a", "b"]
    assert keys({"tags": {"$eq": "go"}}) == ["a", "c"]
    assert keys({"tags": {"$in": ["python", "rust"]}}) == ["b"]
    assert keys({"tags": {"$nin": ["go"]}}) == ["b"]
    assert keys({"$and": [{"ts": {"$gte": 150}}, {"ts": {"$lt": 300}}]}) == ["b"]
    assert keys({"$or": [{"tenant": {"$ne": "t"}}, {"ts": {"$lte": 100}}]}) == ["a", "c"]
    assert keys({"missing": {"$exists": False}, "tenant": "t"}) == ["a", "b"]
    with pytest.raises(ClientError, match="non-empty"):
        keys({"tags": {"$in": []}})
    with pytest.raises(ClientError, match="number"):
        keys({"ts": {"$gt": "1"}})
    result = fake.query_vectors(**NAMES, topK=2, queryVector=q, returnDistance=True)["vectors"]
    assert result[0] == {"key": "a", "distance": pytest.approx(0.0, abs=1e-6)}
    text_only = fake.query_vectors(
        **NAMES,
        topK=5,
        queryTexts=[{"text": "grpc deadline", "metadataKey": "text"}],
        filter={"tenant": "t"},
        returnScores=True,
    )["vectors"]
    assert [v["key"] for v in text_only] == ["a"] and text_only[0]["scores"]["bm25Scores"][0]["score"] > 0
    hybrid = fake.query_vectors(
        **NAMES,
        topK=5,
        queryVector={"float32": [0, 1, 0, 0]},
        returnScores=True,
        queryTexts=[{"text": "grpc deadline", "metadataKey": "text"}],
    )["vectors"]
    assert (
        hybrid[0]["key"] == "c" and "fused" in hybrid[0]["scores"] and "vectorDistance" in hybrid[0]["scores"]
    )


def test_list_pagination_and_segments(fake: FakeS3VectorsClient) -> None:
    fake.put_vectors(**NAMES, vectors=[vec(f"k{i:03d}") for i in range(25)])
    seen, token = [], None
    while True:
        page = fake.list_vectors(**NAMES, maxResults=10, **({"nextToken": token} if token else {}))
        seen += [v["key"] for v in page["vectors"]]
        token = page.get("nextToken")
        if not token:
            break
    assert len(seen) == 25 == len(set(seen))
    segments = [fake.list_vectors(**NAMES, segmentCount=3, segmentIndex=i)["vectors"] for i in range(3)]
    assert sum(len(s) for s in segments) == 25
    with pytest.raises(ClientError):
        fake.list_vectors(**NAMES, maxResults=1001)
    with pytest.raises(ClientError):
        fake.list_vectors(**NAMES, segmentCount=17, segmentIndex=0)


def test_index_creation_limits() -> None:
    fake = FakeS3VectorsClient()
    fake.create_vector_bucket(vectorBucketName=B)
    with pytest.raises(ClientError, match="non-filterable"):
        fake.create_index(
            vectorBucketName=B,
            indexName=IX,
            dataType="float32",
            dimension=4,
            distanceMetric="cosine",
            metadataConfiguration={"nonFilterableMetadataKeys": [f"k{i}" for i in range(11)]},
        )
    with pytest.raises(ClientError, match="ENHANCED"):
        fake.create_index(
            vectorBucketName=B,
            indexName=IX,
            dataType="float32",
            dimension=4,
            distanceMetric="cosine",
            metadataConfiguration={"textSearchConfigurations": [{"metadataKey": "text"}]},
        )
    fake.create_index(
        vectorBucketName=B, indexName=IX, dataType="float32", dimension=4096, distanceMetric="cosine"
    )
    assert fake.get_index(**NAMES)["index"]["dimension"] == 4096
