"""The stdio transport: one JSON-RPC message per line, nothing else on stdout, no token needed."""

from __future__ import annotations

import io
import json

import pytest
from episodic.kernel.auth import Principal
from episodic.mcp.protocol import McpServer
from episodic.mcp.stdio import run_stdio
from episodic.mcp.tools import Tool, ToolOutput, ToolRegistry


def test_stdio_answers_requests_only_and_survives_garbage() -> None:
    seen: list[str] = []

    def whoami(principal: Principal, args: dict) -> ToolOutput:
        seen.append(principal.tenant_id)
        return ToolOutput(principal.tenant_id)

    server = McpServer(ToolRegistry([Tool("whoami", "Who", "test", {"type": "object"}, whoami)]))
    lines = [
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "",
        "{not json",
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        ),
    ]
    out = io.StringIO()
    run_stdio(server, Principal("local"), io.StringIO("\n".join(lines) + "\n"), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a.get("id") for a in answers] == [1, None, None, 3]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[1]["error"]["code"] == -32700 and answers[2]["error"]["code"] == -32600
    assert answers[3]["result"]["content"][0]["text"] == "local" and seen == ["local"]


def test_tool_names_follow_the_2025_11_25_rule() -> None:
    def noop(principal: Principal, args: dict) -> ToolOutput:
        return ToolOutput("")

    for bad in ("", "has space", "x" * 129, "slash/name"):
        with pytest.raises(ValueError):
            ToolRegistry([Tool(bad, "t", "d", {"type": "object"}, noop)])
    with pytest.raises(ValueError):
        ToolRegistry(
            [Tool("a", "t", "d", {"type": "object"}, noop), Tool("a", "t", "d", {"type": "object"}, noop)]
        )


def test_an_internal_error_answers_that_request_and_the_session_goes_on() -> None:
    class Exploding(McpServer):
        def handle_jsonrpc(self, message: dict, principal: Principal) -> dict | None:  # type: ignore[override]
            if message.get("id") == 1:
                raise RuntimeError("boom")
            return super().handle_jsonrpc(message, principal)

    lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in (1, 2)]
    out = io.StringIO()
    run_stdio(Exploding(ToolRegistry([])), Principal("local"), io.StringIO("\n".join(lines) + "\n"), out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error"}}
    assert second["id"] == 2 and second["result"] == {}
