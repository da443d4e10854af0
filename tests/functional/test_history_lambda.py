"""The AWS face of the history tools: the distill Lambda writes the scrubbed history record (DynamoDB
metadata, S3 record) for each uploaded transcript, and the MCP Lambda serves the history tools over it,
tenant-scoped by the authorizer's context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodic.assembly import build_memory
from episodic.aws.dynamo_history import DynamoS3HistoryStore
from episodic.aws.s3vectors_store import S3VectorsStore
from episodic.embed.hashing import HashingEmbedder
from episodic.history.models import HistoryFilters, WorkLink
from episodic.history.service import kept_history
from episodic.kernel.settings import load_deployed_settings
from kits.lambda_env import (
    BUCKET,
    FIXTURE_SESSION,
    PREFIX,
    VECTOR_BUCKET,
    VECTOR_INDEX,
    LocalCloud,
    call_tool,
    card,
    converse_reply,
    local_cloud,
)

from lambdas.distill import handler as distill
from lambdas.mcp import handler as mcp

HISTORY_TABLE = "episodic-history"


@pytest.fixture()
def cloud(episodic_home: Path) -> Iterator[LocalCloud]:
    """The local cloud with the stack's history table, and both Lambdas' memories built with it."""
    with local_cloud(episodic_home) as c:
        c.dynamodb.create_table(
            TableName=HISTORY_TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        settings = distill.runtime().settings.model_copy(update={"history_table": HISTORY_TABLE})
        for runtime in (distill.runtime(), mcp.runtime()):
            runtime.memory.settings = settings
            runtime.memory.parts["history"] = DynamoS3HistoryStore(
                c.dynamodb, c.s3, table=HISTORY_TABLE, bucket=BUCKET, prefix=settings.history_prefix
            )
        yield c


def _tool(name: str, args: dict[str, Any], tenant: str, scopes: str = "read") -> dict[str, Any]:
    result = call_tool(name, args, {"tenant": tenant, "scopes": scopes})
    assert result["statusCode"] == 200
    return json.loads(result["body"])["result"]  # type: ignore[no-any-return]


def _ingest(cloud: LocalCloud, tenant: str) -> None:
    cloud.poll_once(distill.handler)  # S3's test event
    cloud.upload_session(tenant)
    cloud.stub_converse(converse_reply(card()))
    assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}


def test_distill_lambda_writes_the_scrubbed_history_record(cloud: LocalCloud) -> None:
    _ingest(cloud, "acme")
    item = cloud.dynamodb.get_item(
        TableName=HISTORY_TABLE, Key={"pk": {"S": "acme#session"}, "sk": {"S": FIXTURE_SESSION}}
    )["Item"]
    key = item["record_key"]["S"]
    assert key == f"history/acme/{FIXTURE_SESSION}.json"
    stored = cloud.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    assert "AKIAIOSFODNN7EXAMPLE" not in stored and json.loads(stored)["tenant_id"] == "acme"
    assert json.loads(stored)["turns"]
    # the same bytes again (a new upload event): the record is not rewritten
    history = kept_history(distill.runtime().memory)
    assert history is not None and history.put(history.get("acme", FIXTURE_SESSION)) is False  # type: ignore[arg-type]


def test_mcp_lambda_serves_every_history_tool_tenant_scoped(cloud: LocalCloud) -> None:
    _ingest(cloud, "acme")
    record = kept_history(mcp.runtime().memory).get("acme", FIXTURE_SESSION)  # type: ignore[union-attr]
    assert record is not None
    word = next(w for w in record.turns[0].prompt.split() if len(w) > 5 and w.isalpha())
    found = _tool("history_search", {"topic": word}, "acme")
    assert found["isError"] is False
    assert [r["session_id"] for r in found["structuredContent"]["results"]] == [FIXTURE_SESSION]
    assert _tool("history_search", {"topic": word}, "globex")["structuredContent"]["results"] == []
    for name, args in {
        "history_thread": {"topic": word},
        "history_query": {"topic": word},
        "history_decisions": {"topic": word},
        "history_timeline": {},
    }.items():
        mine, theirs = _tool(name, args, "acme"), _tool(name, args, "globex")
        assert mine["isError"] is False and theirs["isError"] is False, name
        assert FIXTURE_SESSION not in json.dumps(theirs), name
        # decisions are those tied to the topic: the fixture's prompt word need not sit in a decision
        assert name == "history_decisions" or FIXTURE_SESSION in json.dumps(mine), name
    refused = call_tool(
        "link_work_item",
        {"session_id": FIXTURE_SESSION, "item": "ENT-7"},
        {"tenant": "acme", "scopes": "read"},
    )
    assert "write" in json.dumps(json.loads(refused["body"]))
    linked = _tool("link_work_item", {"session_id": FIXTURE_SESSION, "item": "ENT-7"}, "acme", "read write")
    assert linked["isError"] is False
    sessions = _tool("work_item_sessions", {"target": "ENT-7"}, "acme")["structuredContent"]["links"]
    assert [s["session_id"] for s in sessions] == [FIXTURE_SESSION] and sessions[0]["session"][
        "outcome"
    ] == "verified"
    assert _tool("work_item_sessions", {"target": "ENT-7"}, "globex")["structuredContent"]["links"] == []


def test_the_deployed_memory_gets_the_history_store_from_settings(
    cloud: LocalCloud, episodic_home: Path
) -> None:
    settings = load_deployed_settings(
        home=str(episodic_home),
        vector_bucket=VECTOR_BUCKET,
        vector_index=VECTOR_INDEX,
        transcripts_bucket=BUCKET,
        transcripts_prefix=PREFIX,
        history_table=HISTORY_TABLE,
    )
    from episodic.aws.clients import AwsClients

    memory = build_memory(
        settings,
        clients=AwsClients(s3=cloud.s3, dynamodb=cloud.dynamodb, s3vectors=cloud.vectors),
        embedder=HashingEmbedder(1024),
        store=S3VectorsStore(cloud.vectors, VECTOR_BUCKET, VECTOR_INDEX, sleep=lambda _s: None),
    )
    store = kept_history(memory)
    assert isinstance(store, DynamoS3HistoryStore) and store.table == HISTORY_TABLE
    without = load_deployed_settings(
        home=str(episodic_home), vector_bucket=VECTOR_BUCKET, transcripts_bucket=BUCKET
    )
    bare = build_memory(
        without,
        clients=AwsClients(s3=cloud.s3, s3vectors=cloud.vectors),
        embedder=HashingEmbedder(1024),
        store=memory.store,
    )
    assert kept_history(bare) is None


def test_forget_deletes_the_record_object_metadata_and_links(cloud: LocalCloud) -> None:
    _ingest(cloud, "acme")
    history = kept_history(mcp.runtime().memory)
    assert history is not None
    _tool("history_search", {"topic": "docker"}, "acme")  # warms this process's full-text mirror
    history.add_links(
        [
            WorkLink(
                tenant_id="acme",
                session_id=FIXTURE_SESSION,
                item="ENT-1",
                kind="jira",
                origin="confirmed",
                linked_at=datetime.now(UTC),
            )
        ]
    )
    assert history.forget("acme", FIXTURE_SESSION) is True
    assert history.get("acme", FIXTURE_SESSION) is None and history.links("acme") == []
    listed = cloud.s3.list_objects_v2(Bucket=BUCKET, Prefix="history/acme/").get("KeyCount", 0)
    assert listed == 0
    assert history.sessions("acme", HistoryFilters()) == []  # the mirror forgot it too
