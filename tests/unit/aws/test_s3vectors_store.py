"""S3VectorsStore: the VectorStore behaviours through the limit-enforcing fake, and request shapes
through botocore Stubber on a real s3vectors client (valid against the service model)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.stub import ANY, Stubber
from contract.vector_store_contract import MANIFEST as CONTRACT_MANIFEST
from contract.vector_store_contract import VectorStoreContract
from episodic.aws.s3vectors_metadata import MANIFEST_KEY, MAX_FILTERABLE_BYTES, filterable_metadata, json_size
from episodic.aws.s3vectors_store import S3VectorsStore
from episodic.kernel.errors import ConfigError, InvalidArgumentError, ParityError, TenantError
from episodic.kernel.models import (
    CARD_RENDERINGS,
    RENDERINGS,
    Card,
    CardRecord,
    DistillerInfo,
    IndexManifest,
    Outcome,
    SearchFilters,
)
from episodic.kernel.ports import StoredVector
from episodic.store.render import render
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

DIM = 16
BUCKET, INDEX = "episodic-vectors", "episodes"
MANIFEST = IndexManifest(embedder_id="hashing-16", dimension=DIM, renderings=list(RENDERINGS))
# an index of the card renderings alone (as every index was before `opening`): no opening key to fetch
CARD_MANIFEST = MANIFEST.model_copy(update={"renderings": list(CARD_RENDERINGS)})
ALL = SearchFilters(include_unverified=True)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def near(base: np.ndarray, seed: int, noise: float = 0.05) -> np.ndarray:
    vector = base + noise * np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def record(session: str, tenant: str = "acme", outcome: str = "verified", **extra: Any) -> CardRecord:
    card_fields = {k: extra.pop(k) for k in ("problem", "tags", "steps") if k in extra}
    card = Card(
        problem=card_fields.get("problem", f"Problem of {session}: the build fails after upgrading"),
        steps=card_fields.get("steps", ["Read the error", "Pinned the dependency"]),
        outcome=Outcome(outcome),
        tags=card_fields.get("tags", ["python"]),
    )
    return CardRecord(
        card=card,
        session_id=session,
        tenant_id=tenant,
        source_sha256="a" * 64,
        distiller=DistillerInfo(kind="heuristic"),
        **extra,
    )


def vectors(
    card: Card, base: np.ndarray, renderings: tuple[str, ...] = CARD_RENDERINGS
) -> list[StoredVector]:
    return [StoredVector(r, render(card, r), near(base, i)) for i, r in enumerate(renderings)]


@pytest.fixture()
def fake() -> FakeS3VectorsClient:
    client = FakeS3VectorsClient()
    make_index(client, BUCKET, INDEX, DIM)
    return client


@pytest.fixture()
def store(fake: FakeS3VectorsClient) -> S3VectorsStore:
    return S3VectorsStore(fake, BUCKET, INDEX, sleep=lambda _s: None)


def put(store: S3VectorsStore, rec: CardRecord, base: np.ndarray) -> None:
    store.upsert(rec, vectors(rec.card, base), MANIFEST)


def queries(fake: FakeS3VectorsClient) -> list[dict[str, Any]]:
    return [params for op, params in fake.calls if op == "QueryVectors"]


# ---------------------------------------------------------------- records


def test_upsert_get_delete_round_trip(store: S3VectorsStore) -> None:
    rec = record("s1", project="shop", started_at=datetime(2026, 1, 2, tzinfo=UTC))
    put(store, rec, unit(1))
    got = store.get("acme", "s1")
    assert got is not None and got.card == rec.card and got.project == "shop" and got.indexed_at is not None
    assert store.get("other", "s1") is None and store.get("acme", "nope") is None
    assert store.delete("acme", "s1") is True
    assert store.delete("acme", "s1") is False
    assert store.get("acme", "s1") is None


def test_upsert_replaces_the_session_card_and_stale_renderings(
    store: S3VectorsStore, fake: FakeS3VectorsClient
) -> None:
    put(store, record("s1", problem="first version of the card"), unit(1))
    newer = record("s1", problem="second version of the card")
    store.upsert(newer, vectors(newer.card, unit(1), ("struct",)), MANIFEST)
    got = store.get("acme", "s1")
    assert got is not None and got.card.problem == "second version of the card"
    keys = set(fake.indexes[(BUCKET, INDEX)].vectors)
    assert keys == {MANIFEST_KEY, "acme#s1#struct"}
    assert store.count("acme") == 1


def test_iter_records_per_tenant_and_pages(store: S3VectorsStore) -> None:
    for i in range(180):  # 540 card vectors: more than one 500-vector list page
        put(store, record(f"s{i}", tenant="acme" if i % 3 else "beta"), unit(i))
    assert store.count("acme") == 120
    assert store.count("beta") == 60
    assert store.count() == 180
    assert {r.tenant_id for r in store.iter_records("beta")} == {"beta"}


# ---------------------------------------------------------------- queries


def test_every_query_is_tenant_filtered_and_verified_only_by_default(
    store: S3VectorsStore, fake: FakeS3VectorsClient
) -> None:
    base = unit(7)
    put(store, record("mine"), base)
    put(store, record("mine-unverified", outcome="unverified"), near(base, 99, 0.01))
    put(store, record("theirs", tenant="beta"), base)
    hits = store.query("acme", base, "build fails", 3, SearchFilters(), MANIFEST, 0.0)
    assert [h.record.session_id for h in hits] == ["mine"]
    hits = store.query("acme", base, "build fails", 3, ALL, MANIFEST, 0.0)
    assert {h.record.session_id for h in hits} == {"mine", "mine-unverified"}
    assert all(h.record.tenant_id == "acme" for h in hits)
    for params in queries(fake):
        assert params["filter"]["$and"][0] == {"tenant": {"$eq": "acme"}}
    assert queries(fake)[0]["filter"]["$and"][1] == {"outcome": {"$eq": "verified"}}


def test_hits_are_grouped_by_session_with_the_best_rendering(store: S3VectorsStore) -> None:
    base = unit(3)
    rec = record("s1")
    store.upsert(
        rec,
        [
            StoredVector("struct", "s", near(base, 101, 0.8)),
            StoredVector("semantic", "m", near(base, 102, 0.01)),
            StoredVector("reflect", "r", near(base, 103, 0.8)),
        ],
        MANIFEST,
    )
    put(store, record("s2"), unit(4))
    hits = store.query("acme", base, "anything", 5, SearchFilters(), MANIFEST, -1.0)
    assert [h.record.session_id for h in hits].count("s1") == 1
    best = next(h for h in hits if h.record.session_id == "s1")
    assert best.rendering == "semantic" and best.similarity > 0.99
    assert hits[0].record.session_id == "s1"


def test_weak_matches_are_dropped(store: S3VectorsStore) -> None:
    base = unit(5)
    put(store, record("s1"), base)
    assert store.query("acme", -base, "unrelated words", 3, SearchFilters(), MANIFEST, 0.3) == []
    assert len(store.query("acme", base, "unrelated words", 3, SearchFilters(), MANIFEST, 0.3)) == 1


def test_project_tags_and_since_filters(store: S3VectorsStore) -> None:
    base = unit(11)
    put(store, record("old", project="shop", started_at=datetime(2025, 1, 1, tzinfo=UTC), tags=["go"]), base)
    put(
        store,
        record("new", project="shop", started_at=datetime(2026, 3, 1, tzinfo=UTC), tags=["go", "grpc"]),
        base,
    )
    put(
        store, record("other", project="blog", started_at=datetime(2026, 3, 1, tzinfo=UTC), tags=["go"]), base
    )

    def ids(filters: SearchFilters) -> set[str]:
        return {h.record.session_id for h in store.query("acme", base, "q", 5, filters, MANIFEST, 0.0)}

    assert ids(SearchFilters(project="shop")) == {"old", "new"}
    assert ids(SearchFilters(tags=["grpc"])) == {"new"}
    assert ids(SearchFilters(tags=["GRPC", "rust"])) == {"new"}  # any of them, any case
    assert ids(SearchFilters(since=datetime(2026, 1, 1, tzinfo=UTC))) == {"new", "other"}
    assert ids(SearchFilters(project="shop", since=datetime(2026, 1, 1, tzinfo=UTC))) == {"new"}


def test_top_k_is_capped_at_the_service_limit(store: S3VectorsStore, fake: FakeS3VectorsClient) -> None:
    put(store, record("s1"), unit(1))
    store.query("acme", unit(1), "q", 3, SearchFilters(), MANIFEST, 0.0)
    store.query("acme", unit(1), "q", 40, SearchFilters(), MANIFEST, 0.0)
    # always the service's maximum: the pool the vector half is standardised over (store.base.Candidates)
    assert [q["topK"] for q in queries(fake)] == [100, 100]


def test_query_on_an_empty_index_returns_nothing(store: S3VectorsStore, fake: FakeS3VectorsClient) -> None:
    assert store.query("acme", unit(1), "q", 3, SearchFilters(), MANIFEST, 0.0) == []
    assert store.manifest() is None and queries(fake) == []


def test_tenant_is_required(store: S3VectorsStore) -> None:
    with pytest.raises(TenantError):
        store.query("", unit(1), "q", 3, SearchFilters(), MANIFEST, 0.0)
    with pytest.raises(InvalidArgumentError, match="#"):
        put(store, record("s1", tenant="a#b"), unit(1))


# ---------------------------------------------------------------- hybrid


def test_hybrid_on_enhanced_index_sends_query_texts(store: S3VectorsStore, fake: FakeS3VectorsClient) -> None:
    put(store, record("s1", problem="Websocket reconnect storm after deploy"), unit(1))
    assert store.hybrid is True
    hits = store.query("acme", unit(1), "websocket reconnect storm", 3, SearchFilters(), MANIFEST, 0.0)
    params = queries(fake)[-1]
    assert params["queryTexts"] == [{"text": "websocket reconnect storm", "metadataKey": "text"}]
    assert params["returnScores"] is True
    assert hits[0].keyword_rank == 1 and hits[0].score > 0


def test_classic_index_is_vector_only() -> None:
    fake = FakeS3VectorsClient()
    make_index(fake, BUCKET, INDEX, DIM, mode="CLASSIC")
    store = S3VectorsStore(fake, BUCKET, INDEX)
    put(store, record("s1"), unit(1))
    assert store.hybrid is False
    hits = store.query("acme", unit(1), "build fails", 3, SearchFilters(), MANIFEST, 0.0)
    assert len(hits) == 1 and hits[0].similarity == pytest.approx(1.0, abs=0.01)
    assert "queryTexts" not in queries(fake)[-1]


def test_constructor_flag_overrides_detection(fake: FakeS3VectorsClient) -> None:
    store = S3VectorsStore(fake, BUCKET, INDEX, hybrid=False)
    put(store, record("s1"), unit(1))
    store.query("acme", unit(1), "build fails", 3, SearchFilters(), MANIFEST, 0.0)
    assert "queryTexts" not in queries(fake)[-1]


def test_keyword_only_hit_gets_its_true_cosine(store: S3VectorsStore) -> None:
    query = unit(100)
    for i in range(12):  # close in vector space, no shared words
        put(store, record(f"near{i}", problem=f"Unrelated matter number {i}"), near(query, i, 0.1))
    target = record("target", problem="Kafka consumer rebalance loop")
    target_vector = near(-query, 5, 0.3)
    put(store, target, target_vector)
    # k covers every session: under the core's fusion (the same on both stores) a keyword-only hit ranks
    # below twelve sessions that all three rendering rankings found
    hits = store.query("acme", query, "kafka consumer rebalance loop", 13, SearchFilters(), MANIFEST, -1.0)
    by_id = {h.record.session_id: h for h in hits}
    assert "target" in by_id
    expected = max(float(v.vector @ query) for v in vectors(target.card, target_vector))
    assert by_id["target"].similarity == pytest.approx(expected, abs=1e-4)
    assert by_id["target"].keyword_rank == 1
    # and the threshold still applies to it
    strict = store.query("acme", query, "kafka consumer rebalance loop", 13, SearchFilters(), MANIFEST, 0.5)
    assert "target" not in {h.record.session_id for h in strict}


# ---------------------------------------------------------------- parity


def test_manifest_is_stored_once_and_checked_on_write_and_query(
    store: S3VectorsStore, fake: FakeS3VectorsClient
) -> None:
    put(store, record("s1"), unit(1))
    assert store.manifest() == MANIFEST
    _, meta = fake.indexes[(BUCKET, INDEX)].vectors[MANIFEST_KEY]
    assert "tenant" not in meta  # so no tenant-filtered query can ever return it
    other = MANIFEST.model_copy(update={"embedder_id": "minilm-l6-v2"})
    with pytest.raises(ParityError, match=r"hashing-16.*minilm-l6-v2"):
        store.query("acme", unit(1), "q", 3, SearchFilters(), other, 0.0)
    with pytest.raises(ParityError):
        store.upsert(record("s2"), vectors(record("s2").card, unit(2)), other)
    fresh = S3VectorsStore(fake, BUCKET, INDEX)  # another process reads the stored manifest
    with pytest.raises(ParityError, match="renderings"):
        fresh.ensure_manifest(MANIFEST.model_copy(update={"renderings": ["struct"]}))


def test_dimension_mismatches_are_parity_errors(store: S3VectorsStore) -> None:
    with pytest.raises(ParityError, match="16-d"):
        store.ensure_manifest(MANIFEST.model_copy(update={"dimension": 32}))
    put(store, record("s1"), unit(1))
    with pytest.raises(ParityError):
        store.query("acme", np.ones(8, dtype=np.float32), "q", 3, SearchFilters(), MANIFEST, 0.0)
    with pytest.raises(ParityError, match="not in the index manifest"):
        store.upsert(record("s2"), [StoredVector("other", "x", unit(2))], MANIFEST)
    with pytest.raises(ParityError, match="dimension 8"):
        store.upsert(record("s2"), [StoredVector("struct", "x", np.ones(8, dtype=np.float32))], MANIFEST)


def test_zero_and_nan_vectors_never_reach_the_service(
    store: S3VectorsStore, fake: FakeS3VectorsClient
) -> None:
    rec = record("s1")
    with pytest.raises(InvalidArgumentError, match="all zeros"):
        store.upsert(rec, [StoredVector("struct", "x", np.zeros(DIM, dtype=np.float32))], MANIFEST)
    bad = unit(1).copy()
    bad[0] = np.nan
    with pytest.raises(InvalidArgumentError, match="NaN"):
        store.upsert(rec, [StoredVector("struct", "x", bad)], MANIFEST)
    assert not [op for op, p in fake.calls if op == "PutVectors" and p["vectors"][0]["key"] != MANIFEST_KEY]


# ---------------------------------------------------------------- metadata limits


def test_filterable_metadata_is_cut_to_two_kilobytes(store: S3VectorsStore) -> None:
    rec = record("s1", project="p" * 5000, tags=[f"tag-{i}-" + "x" * 50 for i in range(12)])
    meta = filterable_metadata(rec, "struct")
    assert json_size(meta) <= MAX_FILTERABLE_BYTES and len(meta["project"]) == 200
    put(store, rec, unit(1))  # the fake enforces the 2 KB / 40 KB limits
    got = store.get("acme", "s1")
    assert got is not None and got.card == rec.card and got.project == rec.project
    long_session = record("s" * 1500, problem="long session id", tags=[f"t{i}" * 20 for i in range(12)])
    meta = filterable_metadata(long_session, "struct")
    assert len(meta["tags"]) < 12 and json_size(meta) <= MAX_FILTERABLE_BYTES  # tags cut first
    with pytest.raises(InvalidArgumentError, match="over the S3 Vectors limit"):
        filterable_metadata(record("s" * 2100, problem="too long"), "struct")


def test_record_over_forty_kilobytes_is_refused(store: S3VectorsStore) -> None:
    rec = record("s1", steps=["a long step " * 400] * 12)
    with pytest.raises(InvalidArgumentError, match="40960"):
        put(store, rec, unit(1))


def test_missing_index_is_a_config_error() -> None:
    fake = FakeS3VectorsClient()
    fake.create_vector_bucket(vectorBucketName=BUCKET)
    with pytest.raises(ConfigError, match="not found"):
        S3VectorsStore(fake, BUCKET, INDEX).ensure_manifest(MANIFEST)


def test_throttled_puts_are_retried(store: S3VectorsStore, fake: FakeS3VectorsClient) -> None:
    from botocore.exceptions import ClientError

    real_put = fake.put_vectors
    failures = [1, 1]

    def flaky_put(**params: Any) -> dict[str, Any]:
        if failures:
            failures.pop()
            raise ClientError(
                {"Error": {"Code": "ServiceUnavailableException", "Message": "slow"}}, "PutVectors"
            )
        return real_put(**params)

    fake.put_vectors = flaky_put  # type: ignore[method-assign]
    put(store, record("s1"), unit(1))
    assert store.get("acme", "s1") is not None


# ---------------------------------------------------------------- request shapes (Stubber)


@pytest.fixture()
def real_client() -> Any:
    return boto3.client(
        "s3vectors", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


INDEX_DESCRIPTION = {
    "index": {
        "vectorBucketName": BUCKET,
        "indexName": INDEX,
        "indexArn": f"arn:aws:s3vectors:us-east-1:123456789012:bucket/{BUCKET}/index/{INDEX}",
        "creationTime": datetime(2026, 1, 1, tzinfo=UTC),
        "dataType": "float32",
        "dimension": DIM,
        "distanceMetric": "cosine",
        "indexMode": "ENHANCED",
        "metadataConfiguration": {
            "nonFilterableMetadataKeys": ["record", "text"],
            "textSearchConfigurations": [{"metadataKey": "text", "language": "en", "status": "ACTIVE"}],
        },
    }
}
NAMES = {"vectorBucketName": BUCKET, "indexName": INDEX}
MANIFEST_VECTOR = {
    "key": MANIFEST_KEY,
    "metadata": {"kind": "manifest", "record": CARD_MANIFEST.model_dump_json()},
}


def test_request_shapes_for_put_query_get(real_client: Any) -> None:
    store = S3VectorsStore(real_client, BUCKET, INDEX)
    rec = record("s1", project="shop")
    base = unit(1)
    with Stubber(real_client) as stub:
        stub.add_response(
            "get_vectors",
            {"vectors": [MANIFEST_VECTOR]},
            expected_params={**NAMES, "keys": [MANIFEST_KEY], "returnData": False, "returnMetadata": True},
        )
        stub.add_response("get_index", INDEX_DESCRIPTION, expected_params=NAMES)
        stub.add_response(
            "put_vectors",
            {},
            expected_params={
                **NAMES,
                "vectors": [
                    {"key": f"acme#s1#{r}", "data": {"float32": ANY}, "metadata": ANY}
                    for r in CARD_RENDERINGS
                ],
            },
        )
        store.upsert(rec, vectors(rec.card, base), CARD_MANIFEST)

        stored_meta = {
            "tenant": "acme",
            "session_id": "s1",
            "rendering": "struct",
            "record": rec.model_dump_json(),
        }
        stub.add_response(
            "query_vectors",
            {
                "vectors": [
                    {
                        "key": "acme#s1#struct",
                        "metadata": stored_meta,
                        "scores": {"fused": 0.03, "vectorDistance": 0.1},
                    }
                ],
                "distanceMetric": "cosine",
            },
            expected_params={
                **NAMES,
                "topK": 100,
                "queryVector": {"float32": ANY},
                "filter": {
                    "$and": [
                        {"tenant": {"$eq": "acme"}},
                        {"outcome": {"$eq": "verified"}},
                        {"project": {"$eq": "shop"}},
                        {"rendering": {"$in": ["semantic", "struct"]}},  # the voting renderings only
                        # a vetoed card never (episodic.cards.review); vectors from before reviews have no key
                        {"$or": [{"review": {"$exists": False}}, {"review": {"$ne": "vetoed"}}]},
                    ]
                },
                "returnMetadata": True,
                "returnDistance": True,
                "queryTexts": [{"text": "build fails", "metadataKey": "text"}],
                "returnScores": True,
            },
        )
        # the semantic cosine the service did not return comes from the stored vector
        semantic = unit(99)  # its cosine with the query is below the struct one (0.9)
        assert float(semantic @ base) < 0.9
        stub.add_response(
            "get_vectors",
            {"vectors": [{"key": "acme#s1#semantic", "data": {"float32": [float(x) for x in semantic]}}]},
            expected_params={
                **NAMES,
                "keys": ["acme#s1#semantic"],
                "returnData": True,
                "returnMetadata": False,
            },
        )
        hits = store.query("acme", base, "build fails", 3, SearchFilters(project="shop"), CARD_MANIFEST, 0.3)
        # the core's fusion ranks (the same rule as the SQLite store), not the service's fused score 0.03:
        # a pool of one session has no spread (z = 0) and no keyword score
        assert len(hits) == 1 and hits[0].similarity == pytest.approx(0.9) and hits[0].score == 0.0

        stub.add_response(
            "get_vectors",
            {"vectors": [{"key": "acme#s1#struct", "metadata": stored_meta}]},
            expected_params={
                **NAMES,
                "keys": ["acme#s1#struct", "acme#s1#semantic", "acme#s1#reflect"],
                "returnData": False,
                "returnMetadata": True,
            },
        )
        got = store.get("acme", "s1")
        assert got is not None and got.session_id == "s1"
        stub.assert_no_pending_responses()


def test_put_metadata_shape_keeps_text_on_the_primary_rendering_only(fake: FakeS3VectorsClient) -> None:
    store = S3VectorsStore(fake, BUCKET, INDEX)
    put(store, record("s1", tags=["Python", "pytest"]), unit(1))
    put_call = [p for op, p in fake.calls if op == "PutVectors"][-1]
    metas = {v["key"].rsplit("#", 1)[-1]: v["metadata"] for v in put_call["vectors"]}
    assert "text" in metas["struct"] and "text" not in metas["semantic"] and "text" not in metas["reflect"]
    assert metas["struct"]["tags"] == ["python", "pytest"] and metas["struct"]["outcome"] == "verified"
    assert all(isinstance(v["data"]["float32"][0], float) for v in put_call["vectors"])


# ---------------------------------------------------------------- the shared VectorStore contract


class TestS3VectorsContract(VectorStoreContract):
    """The same contract as the SQLite store, through the fake (an ENHANCED index, as deployed)."""

    @pytest.fixture()
    def store_factory(self) -> Callable[[], S3VectorsStore]:
        def make() -> S3VectorsStore:
            client = FakeS3VectorsClient()
            make_index(client, BUCKET, INDEX, CONTRACT_MANIFEST.dimension)
            return S3VectorsStore(client, BUCKET, INDEX, sleep=lambda _s: None)

        return make
