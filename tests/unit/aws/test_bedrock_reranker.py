"""The Bedrock reranker (episodic.aws.bedrock_reranker) against botocore's own model of Rerank: a real
`bedrock-agent-runtime` client with the Stubber, which checks the request and the response against the
service's documented shapes; limits enforced before sending; failures keep the first stage's order."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber
from episodic.assembly import build_reranker
from episodic.aws.bedrock_reranker import (
    DOCUMENT_CHARS,
    MAX_SOURCES,
    QUERY_CHARS,
    BedrockReranker,
)
from episodic.aws.clients import AwsClients
from episodic.cards.present import pack_card
from episodic.core.search import search_traces
from episodic.kernel.errors import ConfigError
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome, SearchHit
from episodic.kernel.settings import load_settings
from kits.mcp_testkit import ALPHA, EPISODES, build_memory, populate

ARN = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"


def rerank_client(region: str = "us-west-2") -> Any:
    return boto3.client(
        "bedrock-agent-runtime",
        region_name=region,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def hit(session_id: str, score: float, similarity: float = 0.6, long: bool = False) -> SearchHit:
    words = "The deploy script hangs on the migration step while the lock is held. " * 8
    card = Card(
        problem=words[:590] if long else f"The build of {session_id} fails after the dependency upgrade.",
        insight=words[:590] if long else f"Pin the version {session_id} needs.",
        dead_ends=[words[:190]] * 4 if long else [],
        outcome=Outcome.VERIFIED,
    )
    record = CardRecord(
        card=card,
        session_id=session_id,
        tenant_id=ALPHA,
        started_at=datetime(2026, 11, 2, 9, tzinfo=UTC),
        source_sha256="0" * 64,
        distiller=DistillerInfo(kind="heuristic"),
        indexed_at=datetime(2026, 11, 2, 10, tzinfo=UTC),
    )
    return SearchHit(record=record, score=score, similarity=similarity, pool_size=40)


def documented_request(query: str, hits: list[SearchHit], arn: str = ARN) -> dict[str, Any]:
    """The request as the API reference spells it (API_agent-runtime_Rerank)."""
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {
                    "type": "TEXT",
                    "textDocument": {"text": pack_card(h.record, max_chars=DOCUMENT_CHARS)},
                },
            }
            for h in hits
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "modelConfiguration": {"modelArn": arn},
                "numberOfResults": len(hits),
            },
        },
    }


def results(*pairs: tuple[int, float]) -> dict[str, Any]:
    return {"results": [{"index": i, "relevanceScore": r} for i, r in pairs]}


QUERY = "the build fails after upgrading a dependency"
FIRST = [hit("s-one", 5.0), hit("s-two", 4.0), hit("s-three", 3.0)]


def test_the_request_is_the_documented_one_and_the_models_order_wins() -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0", depth=20)
    with Stubber(client) as stub:
        stub.add_response(
            "rerank", results((2, 0.91), (0, 0.40), (1, 0.12)), documented_request(QUERY, FIRST)
        )
        out = reranker.rerank(QUERY, FIRST)
        stub.assert_no_pending_responses()
    assert [h.record.session_id for h in out] == ["s-three", "s-one", "s-two"]
    # the first stage's scale: the best hit gets the pool's best fused score; each keeps its own cosine
    assert [h.score for h in out] == [5.0, 4.0, 3.0]
    assert [h.similarity for h in out] == [0.6, 0.6, 0.6]


def test_the_response_order_is_read_from_relevance_not_trusted() -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0")
    with Stubber(client) as stub:
        stub.add_response("rerank", results((0, 0.2), (1, 0.9), (2, 0.5)), documented_request(QUERY, FIRST))
        out = reranker.rerank(QUERY, FIRST)
    assert [h.record.session_id for h in out] == ["s-two", "s-three", "s-one"]


def test_a_hit_rated_irrelevant_is_put_under_the_faint_bar() -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0", min_relevance=0.3, faint_score=2.0)
    with Stubber(client) as stub:
        stub.add_response("rerank", results((1, 0.8), (0, 0.35), (2, 0.05)), documented_request(QUERY, FIRST))
        out = reranker.rerank(QUERY, FIRST)
    assert [h.record.session_id for h in out] == ["s-two", "s-one", "s-three"]
    assert out[0].score == 5.0 and out[1].score == 4.0
    assert out[2].score < 2.0  # faint_score: no face offers it as evidence


def test_limits_cards_and_query_are_cut_and_at_most_100_candidates_are_sent() -> None:
    hits = [hit(f"s-{i:03d}", 100.0 - i, long=True) for i in range(MAX_SOURCES + 5)]
    assert len(pack_card(hits[0].record, max_chars=10_000)) > DOCUMENT_CHARS
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0", depth=MAX_SOURCES)
    query = "why does the deploy hang " * 200
    request = reranker.request(query, hits)
    assert len(request["sources"]) == MAX_SOURCES
    assert all(
        len(s["inlineDocumentSource"]["textDocument"]["text"]) <= DOCUMENT_CHARS for s in request["sources"]
    )
    assert len(request["queries"][0]["textQuery"]["text"]) <= QUERY_CHARS
    reversed_ranking = results(*[(i, 1.0 - i / 1000) for i in reversed(range(MAX_SOURCES))])
    with Stubber(client) as stub:
        stub.add_response("rerank", reversed_ranking, request)
        out = reranker.rerank(query, hits)
    # every hit is kept: the ones past the cap follow in the first stage's order
    assert len(out) == len(hits) and out[0].record.session_id == "s-000"
    assert [h.record.session_id for h in out[MAX_SOURCES:]] == [
        f"s-{i:03d}" for i in range(MAX_SOURCES, MAX_SOURCES + 5)
    ]


@pytest.mark.parametrize(
    ("model", "region", "message"),
    [
        (
            "amazon.rerank-v1:0",
            "us-east-1",
            r"not us-east-1; in us-east-1 use rerank_model_id=cohere\.rerank-v3-5:0",
        ),
        ("cohere.rerank-v3-5:0", "eu-west-1", r"only in .*eu-central-1.*not eu-west-1"),
        ("cohere.command-r-v1:0", "us-west-2", r"not a Bedrock reranker model"),
    ],
)
def test_what_cannot_be_sent_is_a_config_error_when_built(model: str, region: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BedrockReranker(rerank_client(region), model)


def test_it_reads_only_its_depth_and_keeps_the_rest_in_order() -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0", depth=2)
    with Stubber(client) as stub:
        stub.add_response("rerank", results((1, 0.9), (0, 0.1)), documented_request(QUERY, FIRST[:2]))
        out = reranker.rerank(QUERY, FIRST)
    assert [h.record.session_id for h in out] == ["s-two", "s-one", "s-three"]
    assert BedrockReranker(client, depth=1).rerank(QUERY, FIRST) == FIRST  # one candidate: no call


def test_a_depth_past_one_billed_query_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="between 1 and 100"):
        BedrockReranker(rerank_client(), depth=MAX_SOURCES + 1)


def test_cohere_in_us_east_1_is_called_with_its_arn() -> None:
    client = rerank_client("us-east-1")
    reranker = BedrockReranker(client, "cohere.rerank-v3-5:0")
    arn = "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0"
    with Stubber(client) as stub:
        stub.add_response(
            "rerank", results((1, 0.7), (0, 0.6), (2, 0.1)), documented_request(QUERY, FIRST, arn)
        )
        out = reranker.rerank(QUERY, FIRST)
    assert out[0].record.session_id == "s-two"


def test_throttling_keeps_the_first_stage_order_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0")
    with Stubber(client) as stub, caplog.at_level(logging.WARNING, "episodic.aws.bedrock_reranker"):
        stub.add_client_error("rerank", service_error_code="ThrottlingException", http_status_code=429)
        stub.add_client_error(
            "rerank", service_error_code="ServiceQuotaExceededException", http_status_code=400
        )
        assert reranker.rerank(QUERY, FIRST) == FIRST
        assert reranker.rerank(QUERY, FIRST) == FIRST
    assert "ThrottlingException" in caplog.text and "first-stage order kept" in caplog.text
    assert reranker.disabled is None  # a passing failure: the next search asks again


def test_a_timeout_is_logged_as_a_timeout(caplog: pytest.LogCaptureFixture) -> None:
    client = rerank_client()

    def time_out(**_kwargs: Any) -> None:
        raise ReadTimeoutError(endpoint_url="https://bedrock-agent-runtime.us-west-2.amazonaws.com/rerank")

    client.meta.events.register("before-send.bedrock-agent-runtime.Rerank", time_out)
    reranker = BedrockReranker(client, "amazon.rerank-v1:0")
    with caplog.at_level(logging.WARNING, "episodic.aws.bedrock_reranker"):
        assert reranker.rerank(QUERY, FIRST) == FIRST
    assert "timed out" in caplog.text


def test_a_malformed_ranking_keeps_the_first_stage_order(caplog: pytest.LogCaptureFixture) -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0")
    with Stubber(client) as stub, caplog.at_level(logging.WARNING, "episodic.aws.bedrock_reranker"):
        stub.add_response("rerank", results((0, 0.9), (0, 0.8), (2, 0.1)), documented_request(QUERY, FIRST))
        assert reranker.rerank(QUERY, FIRST) == FIRST
    assert "did not rank each of 3 candidates once" in caplog.text


def test_no_model_access_is_reported_once_and_then_not_called(caplog: pytest.LogCaptureFixture) -> None:
    client = rerank_client()
    reranker = BedrockReranker(client, "amazon.rerank-v1:0")
    with Stubber(client) as stub, caplog.at_level(logging.WARNING, "episodic.aws.bedrock_reranker"):
        stub.add_client_error(
            "rerank",
            service_error_code="AccessDeniedException",
            service_message="You don't have access to the model with the specified model ID.",
            http_status_code=403,
        )
        assert reranker.rerank(QUERY, FIRST) == FIRST
        assert reranker.rerank(QUERY, FIRST) == FIRST  # no second call: the Stubber has none queued
        stub.assert_no_pending_responses()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and ARN in errors[0].getMessage() and "bedrock:Rerank" in errors[0].getMessage()
    assert reranker.disabled and "AccessDeniedException" in reranker.disabled


# ---------------------------------------------------------------- through the assembly and search_traces


def test_the_setting_builds_it_with_the_agent_runtime_client(tmp_path: Path) -> None:
    settings = load_settings(
        home=tmp_path,
        embedder="hashing",
        reranker="bedrock",
        rerank_model_id="cohere.rerank-v3-5:0",
        rerank_depth=30,
    )
    client = rerank_client("us-east-1")
    reranker = build_reranker(settings, AwsClients(settings, bedrock_agent_runtime=client))
    assert isinstance(reranker, BedrockReranker)
    assert reranker.depth == 30 and reranker.client is client
    assert reranker.model_arn == "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0"


def test_an_unknown_reranker_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reranker"):
        load_settings(home=tmp_path, reranker="cohere")


def test_search_traces_sends_only_the_callers_cards_and_returns_the_models_order(tmp_path: Path) -> None:
    memory = build_memory(load_settings(home=tmp_path, embedder="hashing", min_similarity=-1.0))
    populate(memory)
    query = "postgres pool exhausted while the pytest fixture and the docker cache misbehave"
    first = search_traces(memory, ALPHA, query, k=5)
    alpha_sessions = {sid for tenant, sid, *_ in EPISODES if tenant == ALPHA}
    assert {h.record.session_id for h in first} <= alpha_sessions and len(first) >= 2

    client = rerank_client()
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.bedrock-agent-runtime.Rerank", lambda params, **_: sent.append(params)
    )
    memory.reranker = BedrockReranker(client, "amazon.rerank-v1:0", depth=20)
    last = len(first) - 1
    ranking = results((last, 0.95), *[(i, 0.5 - i / 100) for i in range(last)])
    with Stubber(client) as stub:
        stub.add_response("rerank", ranking, documented_request(query, first))
        second = search_traces(memory, ALPHA, query, k=2)
        stub.assert_no_pending_responses()

    assert [h.record.session_id for h in second] == [
        first[last].record.session_id,
        first[0].record.session_id,
    ]
    assert second[0].score == first[0].score  # the first stage's scale
    texts = [s["inlineDocumentSource"]["textDocument"]["text"] for s in sent[0]["sources"]]
    beta_cards = [card for tenant, *_, card in EPISODES if tenant != ALPHA]
    assert len(texts) == len(first)
    assert not any(card.insight and card.insight in text for card in beta_cards for text in texts)


def test_the_rerank_client_makes_one_short_attempt() -> None:
    from episodic.aws.clients import client_config

    config = client_config("bedrock-agent-runtime")
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}
    assert config.connect_timeout <= 2 and config.read_timeout <= 3
