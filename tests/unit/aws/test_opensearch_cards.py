"""Cards on OpenSearch Serverless: the VectorStore contract (the same as SQLite's and S3 Vectors') on the
in-process fake and through the real opensearch-py client over a recorded wire; request shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.credentials import Credentials
from contract.vector_store_contract import MANIFEST, TENANT_A, VectorStoreContract, make_record, put, search
from episodic.aws.opensearch_cards import OpenSearchCardStore, cards_mapping
from episodic.aws.opensearch_client import opensearch_client
from episodic.kernel.settings import load_settings
from fakes.opensearch_fake import FakeOpenSearch
from fakes.opensearch_wire import WireRequest, recording_connection

INDEX = "episodic-cards"


def wired(tmp_path: Path) -> tuple[OpenSearchCardStore, list[WireRequest]]:
    log: list[WireRequest] = []
    settings = load_settings(
        home=tmp_path, opensearch_endpoint="https://abc.us-east-1.aoss.amazonaws.com", aws_region="us-east-1"
    )
    client = opensearch_client(
        settings,
        credentials=Credentials("AKIDEXAMPLE", "s"),
        connection_class=recording_connection(FakeOpenSearch(), log),
    )
    return OpenSearchCardStore(client, INDEX), log


class TestOpenSearchCardContract(VectorStoreContract):
    @pytest.fixture()
    def store_factory(self):  # type: ignore[no-untyped-def]
        return lambda: OpenSearchCardStore(FakeOpenSearch(), INDEX)


class TestOpenSearchCardContractOverTheRealClient(VectorStoreContract):
    @pytest.fixture()
    def store_factory(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        return lambda: wired(tmp_path)[0]


def test_a_query_is_one_msearch_with_knn_and_bm25_under_the_tenant_filter(tmp_path: Path) -> None:
    store, log = wired(tmp_path)
    put(store, make_record("db", "pytest fixture cannot connect to postgres"))
    log.clear()
    search(store, TENANT_A, "postgres connection refused in a pytest fixture")
    requests = [r for r in log if r.path.endswith(("_search", "_msearch"))]
    assert [r.path for r in requests] == ["/_msearch"]
    lines = requests[0].ndjson()
    knn_half, bm25_half = lines[1], lines[3]
    tenant = {"term": {"tenant_id": TENANT_A}}
    for half in (knn_half, bm25_half):
        assert (
            tenant in half["query"]["bool"]["filter"]
            and {"term": {"outcome": "verified"}} in half["query"]["bool"]["filter"]
        )
    knn_fields = [next(iter(c["knn"])) for c in knn_half["query"]["bool"]["should"]]
    # the voting renderings (reflect does not vote; opening does, where a card has it)
    assert knn_fields == ["vec_struct", "vec_semantic", "vec_opening"]
    assert all(
        c["knn"][f]["filter"]["bool"]["filter"][0] == tenant
        for c, f in zip(knn_half["query"]["bool"]["should"], knn_fields, strict=True)
    )
    assert bm25_half["query"]["bool"]["must"] == [
        {"match": {"text": "postgres connection refused in a pytest fixture"}}
    ]
    assert all(r.headers["authorization"].startswith("AWS4-HMAC-SHA256") for r in log)


def test_the_mapping_holds_one_knn_vector_per_rendering_and_the_manifest(tmp_path: Path) -> None:
    store, log = wired(tmp_path)
    put(store, make_record("x", "docker build cache invalidated"))
    (create,) = [r for r in log if r.method == "PUT"]
    body = create.json()
    assert body == cards_mapping(MANIFEST)
    assert body["mappings"]["_meta"]["manifest"]["embedder_id"] == MANIFEST.embedder_id
    assert {k for k, v in body["mappings"]["properties"].items() if v["type"] == "knn_vector"} == {
        "vec_struct", "vec_semantic", "vec_reflect", "vec_opening"
    }  # fmt: skip
    (bulk,) = [r for r in log if r.path == "/_bulk"]
    assert bulk.ndjson()[0] == {"index": {"_index": INDEX}}  # no document id


def test_the_store_setting_chooses_opensearch_for_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic import assembly

    settings = load_settings(
        home=tmp_path, store="opensearch", opensearch_endpoint="https://abc.us-east-1.aoss.amazonaws.com",
        aws_region="us-east-1", opensearch_cards_index="team-cards",
    )  # fmt: skip
    made: list[object] = []
    monkeypatch.setattr(
        "episodic.aws.opensearch_client.opensearch_client", lambda s, **kw: made.append(s) or FakeOpenSearch()
    )
    store = assembly.build_store(settings)
    assert isinstance(store, OpenSearchCardStore) and store.index == "team-cards" and made == [settings]


def test_the_lambdas_settings_accept_cards_on_opensearch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic import assembly
    from episodic.kernel.settings import load_deployed_settings

    settings = load_deployed_settings(
        home=tmp_path, store="opensearch", vector_bucket="episodic-vectors", transcripts_bucket="episodic-t",
        opensearch_endpoint="https://abc.us-east-1.aoss.amazonaws.com", aws_region="us-east-1",
    )  # fmt: skip
    monkeypatch.setattr("episodic.aws.opensearch_client.opensearch_client", lambda s, **kw: FakeOpenSearch())
    assert isinstance(assembly.build_store(settings), OpenSearchCardStore)
