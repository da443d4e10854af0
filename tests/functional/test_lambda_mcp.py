"""The MCP and authorizer Lambdas through HTTP API payload-2.0 events: the tenant comes from the
authorizer's context, never from the request body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodic.cards.write import store_card
from episodic.kernel.models import Card, DistillerInfo, Outcome
from kits.lambda_env import LambdaContext, LocalCloud, authorize, call_tool, http_event, local_cloud

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


def _tool_names(context: dict[str, Any]) -> set[str]:
    listed = _body(
        mcp.handler(
            http_event("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, authorizer=context),
            LambdaContext(),
        )
    )
    return {t["name"] for t in listed["result"]["tools"]}


def test_a_read_only_deployment_lists_no_write_tool_even_to_a_write_token(cloud: LocalCloud) -> None:
    writer = {"tenant": "acme", "scopes": "read write"}
    assert {"record_episode", "review_episode", "link_work_item"} <= _tool_names(writer)
    current = mcp.runtime()
    mcp.set_runtime(
        mcp.McpRuntime(
            settings=current.settings.model_copy(update={"read_only": True}), memory=current.memory
        )
    )
    names = _tool_names(writer)
    assert {"search_traces", "get_episode"} <= names
    assert not names & {"record_episode", "review_episode", "link_work_item"}
    refused = _body(call_tool("record_episode", {"session_id": "s-acme-1", "card": {}}, writer))
    assert "error" in refused or refused["result"]["isError"] is True


def test_every_answer_says_which_search_mode_the_function_runs(cloud: LocalCloud) -> None:
    from episodic.aws.search_mode import store_search_mode

    current = mcp.runtime()
    mcp.set_runtime(
        mcp.McpRuntime(
            settings=current.settings,
            memory=current.memory,
            search_mode=store_search_mode(current.memory.store),
        )
    )
    result = call_tool("search_traces", {"query": PROBLEM}, {"tenant": "acme", "scopes": "read"})
    assert result["headers"][mcp.SEARCH_MODE_HEADER] == "hybrid"  # the fake index is ENHANCED, text on `text`


def test_in_lambda_the_runtime_is_built_at_init_and_a_missing_variable_fails_it_by_name(
    tmp_path: Path,
) -> None:
    import os
    import subprocess
    import sys

    from kits.lambda_env import REPO_ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_") and not k.startswith("AWS_")}
    env.update(
        AWS_LAMBDA_FUNCTION_NAME="episodic-mcp",
        EPISODIC_HOME=str(tmp_path),
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "shared"), str(REPO_ROOT)]),
    )
    result = subprocess.run(
        [sys.executable, "-c", "import lambdas.mcp.handler"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert result.returncode != 0
    assert "vector_bucket" in result.stderr.lower()  # the import (Lambda init) failed on the setting's name


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
    from episodic.kernel.errors import ConfigError

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


def test_a_malformed_token_secret_leaves_valid_tokens_working_in_the_authorizer(cloud: LocalCloud) -> None:
    from fakes.secret_edit import hand_edit
    from kits.lambda_env import SECRET

    token = cloud.add_token("acme")
    assert authorize(token)["isAuthorized"] is True
    hand_edit(cloud.secrets, SECRET, '{"tokens": [{"sha256": "half an edit"')  # someone's console edit
    answer = authorize(token)  # the authorizer rereads the secret on every call here (cache 0)
    assert answer["isAuthorized"] is True and answer["context"]["tenant"] == "acme"
    assert authorize("epi_someone_else")["isAuthorized"] is False


def test_record_episode_is_judged_against_the_tenants_uploaded_transcript_and_archived(
    cloud: LocalCloud,
) -> None:
    from kits.lambda_env import BUCKET, FIXTURE_SESSION, card

    cloud.upload_session("acme")
    arguments = {"session_id": FIXTURE_SESSION, **card(outcome="verified")}
    answer = _body(call_tool("record_episode", arguments, {"tenant": "acme", "scopes": "read write"}))[
        "result"
    ]
    assert answer["isError"] is False, answer
    recorded = answer["structuredContent"]
    assert recorded["transcript_found"] is True and recorded["distiller"] == "self"
    key = f"cards/acme/{FIXTURE_SESSION}.json"
    archived = json.loads(cloud.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert archived["tenant_id"] == "acme" and archived["card"]["outcome"] == recorded["outcome"]
    assert any(key in note for note in recorded["notes"])

    # the same session id under another tenant: no upload of its own, so nothing backs the claim
    other = _body(call_tool("record_episode", arguments, {"tenant": "globex", "scopes": "read write"}))[
        "result"
    ]
    assert other["structuredContent"]["transcript_found"] is False
    assert other["structuredContent"]["outcome"] == "unverified"
