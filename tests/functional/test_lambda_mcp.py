"""The MCP and authorizer Lambdas through HTTP API payload-2.0 events: the tenant comes from the
authorizer's context, never from the request body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodic.ingest import store_card
from episodic.models import Card, DistillerInfo, Outcome
from lambda_env import LambdaContext, LocalCloud, authorize, call_tool, http_event, local_cloud

from lambdas.mcp import handler as mcp

PROBLEM = "Phoenix dev server does not start after upgrading a dependency"


@pytest.fixture()
def cloud(episodic_home: Path) -> Iterator[LocalCloud]:
    with local_cloud(episodic_home) as c:
        memory = mcp.runtime().memory
        memory.store.ensure_manifest(memory.manifest)
        store_card(
            memory,
            "acme",
            Card(
                problem=PROBLEM,
                steps=["Pinned the dependency"],
                insight="A changed default",
                outcome=Outcome.VERIFIED,
            ),
            session_id="s-acme-1",
            distiller=DistillerInfo(kind="bedrock", model="m"),
            source_sha256="0" * 64,
        )
        yield c


def _body(result: dict[str, Any]) -> Any:
    return json.loads(result["body"]) if result["body"] else None


def test_search_uses_the_authorizer_tenant(cloud: LocalCloud) -> None:
    result = call_tool(
        "search_traces", {"query": PROBLEM, "include_unverified": True}, {"tenant": "acme", "scopes": "read"}
    )

    assert result["statusCode"] == 200 and result["headers"]["Content-Type"].startswith("application/json")
    tool = _body(result)["result"]
    assert tool["isError"] is False
    assert [r["session_id"] for r in tool["structuredContent"]["results"]] == ["s-acme-1"]


def test_a_tenant_named_in_the_body_is_never_used(cloud: LocalCloud) -> None:
    arguments = {"query": PROBLEM, "include_unverified": True, "tenant": "acme", "tenant_id": "acme"}

    result = call_tool("search_traces", arguments, {"tenant": "globex", "scopes": "read"})

    assert "s-acme-1" not in result["body"]
    assert PROBLEM not in result["body"]


def test_without_authorizer_context_the_request_is_unauthorized(cloud: LocalCloud) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    result = mcp.handler(http_event("POST", body, authorizer=None), LambdaContext())

    assert result["statusCode"] == 401
    assert result["headers"]["WWW-Authenticate"].startswith("Bearer")


def test_initialize_and_tools_list(cloud: LocalCloud) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    context = {"tenant": "acme", "scopes": "read"}

    answer = _body(mcp.handler(http_event("POST", init, authorizer=context), LambdaContext()))
    listed = _body(
        mcp.handler(
            http_event("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, authorizer=context),
            LambdaContext(),
        )
    )

    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert {t["name"] for t in listed["result"]["tools"]} >= {"search_traces", "get_episode"}


def test_get_and_delete_are_405_and_other_paths_404(cloud: LocalCloud) -> None:
    context = {"tenant": "acme", "scopes": "read"}
    for method in ("GET", "DELETE"):
        result = mcp.handler(http_event(method, authorizer=context), LambdaContext())
        assert result["statusCode"] == 405 and result["headers"]["Allow"] == "POST"
    well_known = http_event("GET", path="/.well-known/oauth-protected-resource", authorizer=context)
    assert mcp.handler(well_known, LambdaContext())["statusCode"] == 404


def test_base64_bodies_are_decoded(cloud: LocalCloud) -> None:
    import base64

    event = http_event("POST", authorizer={"tenant": "acme", "scopes": "read"})
    event["body"] = base64.b64encode(
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
    ).decode()
    event["isBase64Encoded"] = True

    assert _body(mcp.handler(event, LambdaContext())) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_authorizer_maps_tokens_to_tenants_and_denies_the_rest(cloud: LocalCloud) -> None:
    acme = cloud.add_token("acme")
    cloud.add_token("globex", scope="write")

    assert authorize(acme) == {"isAuthorized": True, "context": {"tenant": "acme", "scopes": "read"}}
    assert authorize(cloud.tokens["globex"])["context"] == {"tenant": "globex", "scopes": "read write"}
    assert authorize("epi_not_a_token") == {"isAuthorized": False}
    assert authorize(None) == {"isAuthorized": False}


@pytest.mark.parametrize("variable", ["EPISODIC_VECTOR_BUCKET", "EPISODIC_TRANSCRIPTS_BUCKET"])
def test_a_missing_deployment_variable_fails_the_cold_start_by_name(
    variable: str, episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.aws.clients import AwsClients
    from episodic.errors import ConfigError

    from lambdas.distill import handler as distill

    everything = {"EPISODIC_VECTOR_BUCKET": "vectors", "EPISODIC_TRANSCRIPTS_BUCKET": "transcripts"}
    for name, value in everything.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(variable)
    clients = AwsClients(s3=object(), s3vectors=object(), bedrock_runtime=object())  # never called
    for build in (mcp.build_runtime, distill.build_runtime):
        with pytest.raises(ConfigError, match=rf"required in the AWS deployment: {variable}$"):
            build(clients=clients)


def test_the_deployed_memory_is_built_by_the_one_composition_root(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.aws.bedrock_distiller import BedrockDistiller
    from episodic.aws.clients import AwsClients
    from episodic.aws.pipeline import S3FailureLedger
    from episodic.aws.s3vectors_store import S3VectorsStore
    from episodic.aws.titan_embedder import TitanEmbedder

    for name, value in {
        "EPISODIC_VECTOR_BUCKET": "vectors",
        "EPISODIC_TRANSCRIPTS_BUCKET": "transcripts",
        "EPISODIC_EMBEDDER": "titan",
        "EPISODIC_DISTILLER": "bedrock",
    }.items():
        monkeypatch.setenv(name, value)
    clients = AwsClients(s3=object(), s3vectors=object(), bedrock_runtime=object())
    memory = mcp.build_runtime(clients=clients).memory
    assert isinstance(memory.store, S3VectorsStore) and memory.store.client is clients.s3vectors
    assert isinstance(memory.embedder, TitanEmbedder) and isinstance(memory.distiller, BedrockDistiller)
    assert isinstance(memory.ledger, S3FailureLedger) and memory.ledger.bucket == "transcripts"
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")  # the settings choose, not the deployment's wiring
    assert mcp.build_runtime(clients=clients).memory.embedder.id.startswith("hashing")
