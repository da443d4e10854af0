"""Tenant isolation and scopes through the HTTP face (McpEndpoint.handle, no sockets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from episodic.kernel.auth import Principal, StaticAuthenticator
from episodic.mcp.protocol import HttpRequest, McpEndpoint
from episodic.mcp.tools import Tool, ToolOutput, ToolRegistry, default_registry, read_tools
from kits.mcp_testkit import (
    ALPHA,
    BETA,
    EPISODES,
    NO_MATCH_QUERY,
    SESSIONS_BY_TENANT,
    build_memory,
    populate,
    rpc,
    settings_for,
)

TOKENS = {"tok-alpha": Principal(ALPHA), "tok-beta": Principal(BETA)}


def _call(endpoint: McpEndpoint, token: str, message: dict[str, Any]) -> tuple[int, Any]:
    request = HttpRequest(
        "POST",
        "/mcp",
        {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-06-18",
        },
        json.dumps(message).encode(),
    )
    response = endpoint.handle(request)
    return response.status, response.json()


@pytest.fixture()
def endpoint(tmp_path: Path) -> McpEndpoint:
    memory = build_memory(settings_for(tmp_path))
    populate(memory)
    return McpEndpoint(default_registry(memory), StaticAuthenticator(TOKENS))


def _queries() -> list[str]:
    texts = [NO_MATCH_QUERY, "pytest", "postgres", "beta tenant private insight", "beta-secret-project"]
    for _, session_id, project, _, card in EPISODES:
        texts += [card.problem, card.insight, session_id, project, " ".join(card.tags)]
    return texts


def test_no_query_ever_returns_the_other_tenants_card(endpoint: McpEndpoint) -> None:
    for token, tenant, other in (("tok-alpha", ALPHA, BETA), ("tok-beta", BETA, ALPHA)):
        seen: set[str] = set()
        for query in _queries():
            for extra in (
                {},
                {"include_unverified": True},
                {"project": "beta-secret-project"},
                {"tags": ["python"]},
                {"agent": "claude-code"},  # the kit's cards carry the default agent
                {"agent": "codex", "include_unverified": True},
            ):
                arguments = {"query": query, "k": 5, **extra}
                status, answer = _call(
                    endpoint, token, rpc("tools/call", {"name": "search_traces", "arguments": arguments})
                )
                assert status == 200
                result = answer["result"]
                ids = {h["session_id"] for h in result.get("structuredContent", {}).get("results", [])}
                assert not ids & SESSIONS_BY_TENANT[other], (tenant, query, extra)
                text = result["content"][0]["text"]
                assert not any(sid in text for sid in SESSIONS_BY_TENANT[other])
                seen |= ids
        assert seen == {sid for sid in SESSIONS_BY_TENANT[tenant]}  # the test can see its own cards
        for session_id in SESSIONS_BY_TENANT[other]:
            _, answer = _call(
                endpoint,
                token,
                rpc("tools/call", {"name": "get_episode", "arguments": {"session_id": session_id}}),
            )
            assert answer["result"]["isError"] is True


def test_the_tenant_comes_only_from_the_token(endpoint: McpEndpoint) -> None:
    message = rpc(
        "tools/call",
        {
            "name": "get_episode",
            "arguments": {"session_id": "beta-pytest-fixture"},
            "_meta": {"tenant_id": BETA},
        },
    )
    message["tenant_id"] = BETA
    _, answer = _call(endpoint, "tok-alpha", message)
    assert answer["result"]["isError"] is True
    _, answer = _call(endpoint, "tok-beta", message)
    assert answer["result"]["structuredContent"]["session_id"] == "beta-pytest-fixture"


def test_a_write_tool_needs_the_write_scope(tmp_path: Path) -> None:
    calls: list[str] = []

    def record(principal: Principal, args: dict[str, Any]) -> ToolOutput:
        calls.append(principal.tenant_id)
        return ToolOutput("recorded")

    memory = build_memory(settings_for(tmp_path))
    writer = Tool(
        name="record_episode",
        title="Record",
        description="test",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        handler=record,
        annotations={"readOnlyHint": False},
        required_scope="write",
    )
    registry = ToolRegistry([*read_tools(memory), writer])
    auth = StaticAuthenticator({"r": Principal(ALPHA), "w": Principal(ALPHA, frozenset({"read", "write"}))})
    endpoint = McpEndpoint(registry, auth)
    _, listing = _call(endpoint, "r", rpc("tools/list"))
    assert "record_episode" not in [t["name"] for t in listing["result"]["tools"]]
    status, answer = _call(endpoint, "r", rpc("tools/call", {"name": "record_episode", "arguments": {}}))
    assert status == 403 and "write" in answer["error"]["message"] and calls == []
    status, answer = _call(endpoint, "w", rpc("tools/call", {"name": "record_episode", "arguments": {}}))
    assert status == 200 and answer["result"]["content"][0]["text"] == "recorded" and calls == [ALPHA]


def test_backend_failures_become_tool_errors(tmp_path: Path) -> None:
    def broken(principal: Principal, args: dict[str, Any]) -> ToolOutput:
        raise RuntimeError("disk on fire")

    tool = Tool("broken", "Broken", "test", {"type": "object"}, broken)
    endpoint = McpEndpoint(ToolRegistry([tool]), StaticAuthenticator(TOKENS))
    status, answer = _call(endpoint, "tok-alpha", rpc("tools/call", {"name": "broken", "arguments": {}}))
    assert status == 200 and answer["result"]["isError"] is True
    assert "disk on fire" not in answer["result"]["content"][0]["text"]  # internals stay in the log


def test_handle_jsonrpc_is_transport_free() -> None:
    endpoint = McpEndpoint(ToolRegistry(), StaticAuthenticator(TOKENS))
    principal = Principal(ALPHA)
    assert endpoint.handle_jsonrpc(rpc("notifications/initialized", msg_id=None), principal) is None
    assert endpoint.handle_jsonrpc(rpc("ping", msg_id=5), principal) == {
        "jsonrpc": "2.0",
        "id": 5,
        "result": {},
    }
    assert endpoint.handle_jsonrpc([rpc("ping")], principal)["error"]["code"] == -32600  # type: ignore[index]
    assert (
        endpoint.handle_jsonrpc({"jsonrpc": "1.0", "id": 1, "method": "ping"}, principal)["error"]["code"]
        == -32600
    )  # type: ignore[index]
    assert endpoint.handle_jsonrpc(rpc("tools/call", {"arguments": {}}), principal)["error"]["code"] == -32602  # type: ignore[index]
    # a Lambda-style request with odd header casing
    response = endpoint.handle(
        HttpRequest("POST", "/mcp", {"AUTHORIZATION": "Bearer tok-alpha"}, json.dumps(rpc("ping")).encode())
    )
    assert response.status == 200
