"""Request shapes of the OpenSearch Serverless adapter through the real opensearch-py client: SigV4 for
`aoss` on every request, the tenant filter on every search, the index mapping of the design, no document
ids in writes, the pinned embedder checked against the mapping; and the store contract over the wire."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from botocore.credentials import Credentials
from contract.scratch_store_contract import (
    EMBEDDER,
    MANIFEST,
    NOW,
    WEEK_AGO,
    ScratchStoreContract,
    add,
    record,
)
from episodic.aws.opensearch_client import opensearch_client
from episodic.aws.opensearch_scratch import OpenSearchScratchStore, scratch_mapping
from episodic.kernel.errors import ConfigError, ParityError
from episodic.kernel.settings import load_settings
from episodic.scratch.port import ScratchManifest
from fakes.opensearch_fake import FakeOpenSearch
from fakes.opensearch_wire import WireRequest, recording_connection

ENDPOINT = "https://abc123xyz.us-east-1.aoss.amazonaws.com"
INDEX = "episodic-scratch"


def wired(tmp_path, fake: FakeOpenSearch | None = None):  # type: ignore[no-untyped-def]
    fake = fake or FakeOpenSearch()
    log: list[WireRequest] = []
    settings = load_settings(home=tmp_path, opensearch_endpoint=ENDPOINT, aws_region="us-east-1")
    client = opensearch_client(
        settings,
        credentials=Credentials("AKIDEXAMPLE", "secret"),
        connection_class=recording_connection(fake, log),
    )
    return OpenSearchScratchStore(client, INDEX), fake, log


class TestScratchContractOverTheRealClient(ScratchStoreContract):
    @pytest.fixture()
    def store_factory(self, tmp_path):  # type: ignore[no-untyped-def]
        return lambda: wired(tmp_path)[0]


def test_every_request_is_sigv4_signed_for_aoss(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _, log = wired(tmp_path)
    add(store, record("typecheck failed — cannot find name UserContext"))
    store.query("tenant-a", EMBEDDER.embed(["UserContext"])[0], 3, WEEK_AGO, MANIFEST)
    assert log
    for request in log:
        auth = request.headers["authorization"]
        assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert "/us-east-1/aoss/aws4_request" in auth
        assert "x-amz-content-sha256" in request.headers and "x-amz-date" in request.headers


def test_every_search_carries_the_tenant_filter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _, log = wired(tmp_path)
    add(store, record("lint failed — errcheck", session="s1"))
    store.query("tenant-a", EMBEDDER.embed(["lint errcheck"])[0], 4, WEEK_AGO, MANIFEST)
    store.known_ids("tenant-a", ["x"])
    store.delete_session("tenant-a", "s1")
    store.count("tenant-a")
    searches = [r for r in log if r.path.endswith(("/_search", "/_count"))]
    assert len(searches) >= 4
    for request in searches:
        filters = request.json()["query"]["bool"]["filter"]
        assert {"term": {"tenant_id": "tenant-a"}} in filters


def test_the_knn_query_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _, log = wired(tmp_path)
    add(store, record("tests failed — AssertionError"))
    log.clear()
    store.query("tenant-a", EMBEDDER.embed(["tests failed"])[0], 4, WEEK_AGO, MANIFEST)
    (search,) = [r for r in log if r.path == f"/{INDEX}/_search"]
    body = search.json()
    assert body["size"] == 4
    tenant = {"term": {"tenant_id": "tenant-a"}}
    fresh = {"range": {"created_at": {"gte": "2026-03-03T12:00:00.000Z"}}}
    assert body["query"]["bool"]["filter"] == [tenant, fresh]
    (knn,) = body["query"]["bool"]["must"]
    assert knn["knn"]["embedding"]["k"] == 4 and len(knn["knn"]["embedding"]["vector"]) == MANIFEST.dimension
    assert knn["knn"]["embedding"]["filter"] == {"bool": {"filter": [tenant, fresh]}}
    assert "summary" in body["_source"] and "embedding" not in body["_source"]


def test_the_index_is_created_with_the_designs_mapping_and_writes_carry_no_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _, log = wired(tmp_path)
    add(store, record("build failed — undefined Router"))
    (create,) = [r for r in log if r.method == "PUT" and r.path == f"/{INDEX}"]
    assert create.json() == scratch_mapping(MANIFEST)
    properties = create.json()["mappings"]["properties"]
    assert create.json()["settings"] == {"index": {"knn": True}}
    assert properties["embedding"]["type"] == "knn_vector" and properties["embedding"]["dimension"] == 64
    assert properties["embedding"]["method"]["space_type"] == "cosinesimil"
    assert properties["embedding"]["method"]["name"] == "hnsw"
    assert {properties[k]["type"] for k in ("tenant_id", "session_id", "tool_name", "outcome")} == {"keyword"}
    assert (properties["summary"]["type"], properties["created_at"]["type"]) == ("text", "date")
    (bulk,) = [r for r in log if r.path == "/_bulk"]
    actions = bulk.ndjson()[0::2]
    assert actions == [{"index": {"_index": INDEX}}]
    assert all("refresh" not in r.query for r in log)


def test_the_pinned_embedder_is_checked_against_the_existing_mapping(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOpenSearch()
    fake.indices.create(
        INDEX, scratch_mapping(ScratchManifest(embedder_id="amazon.titan-embed-text-v2:0", dimension=1024))
    )
    store, _, _ = wired(tmp_path, fake)
    with pytest.raises(ParityError, match=r"1024-d vectors of amazon\.titan-embed-text-v2:0"):
        store.query("tenant-a", EMBEDDER.embed(["x"])[0], 3, WEEK_AGO, MANIFEST)


def test_the_fake_enforces_the_documented_knn_limits() -> None:
    from opensearchpy.exceptions import RequestError

    fake = FakeOpenSearch()
    with pytest.raises(RequestError, match=r"index\.knn"):
        fake.indices.create(
            "bad", {"mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 4}}}}
        )
    with pytest.raises(RequestError, match="dimension"):
        fake.indices.create("big", {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 16_001}}}})  # fmt: skip
    fake.indices.create(INDEX, scratch_mapping(MANIFEST))
    vector = [0.1] * MANIFEST.dimension
    with pytest.raises(RequestError, match="Document ID"):
        fake.bulk([{"index": {"_index": INDEX, "_id": "mine"}}, {"embedding": vector}])
    with pytest.raises(RequestError, match="zero vector"):
        fake.bulk([{"index": {"_index": INDEX}}, {"embedding": [0.0] * MANIFEST.dimension}])
    with pytest.raises(RequestError, match="k between"):
        fake.search(INDEX, {"query": {"knn": {"embedding": {"vector": vector, "k": 10_001}}}})
    with pytest.raises(RequestError, match="dimension"):
        fake.search(INDEX, {"query": {"knn": {"embedding": {"vector": [0.1] * 3, "k": 3}}}})
    with pytest.raises(RequestError, match="Result window"):
        fake.search(INDEX, {"size": 10_001, "query": {"match_all": {}}})
    with pytest.raises(RequestError, match="keyword"):
        fake.search(INDEX, {"query": {"term": {"summary": "x"}}})
    with pytest.raises(RequestError, match="refresh"):
        fake.search(INDEX, {"query": {"match_all": {}}}, refresh=True)


def test_a_client_needs_an_endpoint_and_a_region(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="OPENSEARCH_ENDPOINT"):
        opensearch_client(load_settings(home=tmp_path), credentials=Credentials("a", "b"))
    with pytest.raises(ConfigError, match="REGION"):
        opensearch_client(
            load_settings(home=tmp_path, opensearch_endpoint=ENDPOINT), credentials=Credentials("a", "b")
        )


def test_expired_records_are_swept_with_bulk_deletes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _, log = wired(tmp_path)
    add(store, record("tests failed — old", age_days=9), record("tests failed — new", age_days=1))
    log.clear()
    assert store.sweep(NOW - timedelta(days=7)) == 1
    (bulk,) = [r for r in log if r.path == "/_bulk"]
    assert all("delete" in action for action in bulk.ndjson())
    assert store.count() == 1 and datetime.now(UTC) > NOW - timedelta(days=7)


def test_an_erroring_collection_degrades_recall_to_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from episodic.scratch.recall import recall_similar
    from episodic.scratch.service import ScratchMemory
    from episodic.scrub import Scrubber
    from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError

    store, fake, _ = wired(tmp_path)
    add(store, record("tests failed — AssertionError in checkout"))
    settings = load_settings(home=tmp_path, scratch_min_similarity=0.0)
    scratch = ScratchMemory(settings, store, EMBEDDER, Scrubber(), clock=lambda: NOW)
    assert recall_similar(scratch, "tenant-a", "fix the failing checkout tests").hits
    fake.fail_with = OpenSearchConnectionError("N/A", "collection unreachable", None)
    found = recall_similar(scratch, "tenant-a", "fix the failing checkout tests")
    assert found.hits == [] and found.degraded.startswith("error: ConnectionError")


def test_a_reader_on_a_missing_index_finds_nothing_and_creates_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, fake, log = wired(tmp_path)
    assert store.query("tenant-a", EMBEDDER.embed(["lint"])[0], 3, WEEK_AGO, MANIFEST) == []
    assert fake.indexes == {} and not [r for r in log if r.method == "PUT"]


def test_the_degraded_metric_is_one_embedded_metric_format_record() -> None:
    from episodic.scratch.recall import DEGRADED_METRIC, degraded_metric_line

    line = json.loads(degraded_metric_line(NOW))
    assert line[DEGRADED_METRIC] == 1
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    assert directive == {"Namespace": "Episodic", "Dimensions": [[]], "Metrics": [{"Name": DEGRADED_METRIC}]}
    assert line["_aws"]["Timestamp"] == int(NOW.timestamp() * 1000)
