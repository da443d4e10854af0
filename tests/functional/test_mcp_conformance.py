"""Protocol conformance of the local HTTP server, rule by rule, with raw http.client requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from episodic.history.tools import HISTORY_TOOL_NAMES
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.models import Card
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.mcp.protocol import McpEndpoint
from kits.mcp_testkit import ALPHA, BETA, NO_MATCH_QUERY, build_memory, populate, post, rpc, settings_for

V = {"MCP-Protocol-Version": "2025-11-25"}


@dataclass
class Live:
    url: str
    alpha: str
    beta: str

    def auth(self, token: str | None = None, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.alpha}", **V, **extra}

    def call(self, name: str, arguments: object, token: str | None = None) -> dict:
        status, _, body = post(
            self.url, rpc("tools/call", {"name": name, "arguments": arguments}), self.auth(token)
        )
        assert status == 200, body
        return json.loads(body)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("conformance-home")
    settings = settings_for(home).model_copy(update={"allowed_origins": ["https://trusted.example"]})
    memory = build_memory(settings)
    populate(memory)
    tokens = LocalTokenStore(settings.tokens_path)
    alpha, beta = tokens.add(ALPHA), tokens.add(BETA)
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        yield Live(server.url, alpha, beta)


# ---------------------------------------------------------------- auth, origin, paths


def test_missing_token_is_401_with_a_plain_bearer_challenge(live: Live) -> None:
    status, headers, body = post(live.url, rpc("initialize", {"protocolVersion": "2025-11-25"}))
    assert status == 401
    assert headers["www-authenticate"] == 'Bearer realm="episodic"'  # no resource_metadata: no OAuth
    assert json.loads(body)["error"]["message"]


def test_wrong_and_malformed_tokens(live: Live) -> None:
    status, headers, _ = post(live.url, rpc("ping"), {"Authorization": "Bearer epi_wrong"})
    assert status == 401 and "resource_metadata" not in headers["www-authenticate"]
    status, _, _ = post(live.url, rpc("ping"), {"Authorization": "Basic dXNlcjpwYXNz"})
    assert status == 400


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ],
)
def test_oauth_discovery_is_404(live: Live, path: str) -> None:
    url = live.url.replace("/mcp", path)
    status, _, _ = post(url, None, live.auth(), method="GET")
    assert status == 404


def test_foreign_origin_is_403_localhost_and_configured_are_allowed(live: Live) -> None:
    for origin in ("http://evil.example", "http://localhost.evil.example:8765", "null"):
        status, _, _ = post(live.url, rpc("ping"), live.auth(Origin=origin))
        assert status == 403, origin
    for origin in ("http://localhost:3000", "http://127.0.0.1:8765", "https://trusted.example"):
        status, _, _ = post(live.url, rpc("ping"), live.auth(Origin=origin))
        assert status == 200, origin


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_are_405_with_allow_post(live: Live, method: str) -> None:
    status, headers, _ = post(live.url, None, live.auth(), method=method)
    assert status == 405 and headers["allow"] == "POST"


# ---------------------------------------------------------------- messages


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_echoes_supported_versions_without_a_session(live: Live, version: str) -> None:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    status, headers, body = post(
        live.url, rpc("initialize", params), {"Authorization": f"Bearer {live.alpha}"}
    )
    result = json.loads(body)["result"]
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert result["protocolVersion"] == version
    assert "tools" in result["capabilities"] and "search_traces" in result["instructions"]
    assert "mcp-session-id" not in headers


def test_initialize_with_an_unknown_version_answers_the_latest(live: Live) -> None:
    _, _, body = post(live.url, rpc("initialize", {"protocolVersion": "2024-11-05"}), live.auth())
    assert json.loads(body)["result"]["protocolVersion"] == "2025-11-25"


def test_2026_discover_probe_gets_a_plain_error_so_clients_fall_back(live: Live) -> None:
    headers = {
        "Authorization": f"Bearer {live.alpha}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "server/discover",
    }
    status, _, body = post(live.url, rpc("server/discover", {"_meta": {}}), headers)
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] != -32022
    assert error["data"]["supported"] == ["2025-03-26", "2025-06-18", "2025-11-25"]
    # without the header it is just an unknown method: 200 with -32601
    status, _, body = post(live.url, rpc("server/discover"), live.auth())
    assert status == 200 and json.loads(body)["error"]["code"] == -32601


def test_unsupported_protocol_version_header_is_400(live: Live) -> None:
    status, _, body = post(live.url, rpc("tools/list"), {**live.auth(), "MCP-Protocol-Version": "1999-01-01"})
    assert status == 400 and json.loads(body)["id"] == 1


def test_notifications_and_responses_get_202_and_no_body(live: Live) -> None:
    for message in (
        rpc("notifications/initialized", msg_id=None),
        rpc("notifications/cancelled", {"requestId": 3}, msg_id=None),
        {"jsonrpc": "2.0", "id": 7, "result": {}},
    ):
        status, _, body = post(live.url, message, live.auth())
        assert (status, body) == (202, b"")


def test_batches_are_rejected(live: Live) -> None:
    status, _, body = post(live.url, [rpc("ping", msg_id=1), rpc("ping", msg_id=2)], live.auth())
    assert status == 400 and json.loads(body)["error"]["code"] == -32600


def test_content_type_with_charset_is_accepted(live: Live) -> None:
    status, _, body = post(
        live.url, rpc("ping"), live.auth(**{"Content-Type": "application/json; charset=utf-8"})
    )
    assert status == 200 and json.loads(body)["result"] == {}


def test_malformed_json_is_a_parse_error(live: Live) -> None:
    status, _, body = post(live.url, None, live.auth(), raw=b'{"jsonrpc": "2.0", "id": 1,')
    answer = json.loads(body)
    assert status == 400 and answer["error"]["code"] == -32700 and answer["id"] is None


def test_unknown_method_and_unknown_tool(live: Live) -> None:
    _, _, body = post(live.url, rpc("resources/list"), live.auth())
    assert json.loads(body)["error"]["code"] == -32601
    answer = live.call("drop_tables", {})
    assert answer["error"]["code"] == -32602 and "search_traces" in answer["error"]["message"]


def _untitled(schema: Any) -> Any:
    """A JSON Schema without its `title` annotations (a property may still be named "title")."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        k: {name: _untitled(v) for name, v in v.items()} if k == "properties" else _untitled(v)
        for k, v in schema.items()
        if k != "title"
    }


def test_tools_list_declares_schemas_and_read_only_hints(live: Live) -> None:
    _, _, body = post(live.url, rpc("tools/list"), live.auth())
    tools = {t["name"]: t for t in json.loads(body)["result"]["tools"]}
    # a read token: the history tools but link_work_item, which needs the write scope
    assert set(tools) == {
        "search_traces",
        "get_episode",
        "record_episode",
        "review_episode",
        "get_dream_record",
        *HISTORY_TOOL_NAMES,
    } - {"link_work_item"}
    assert tools["record_episode"]["annotations"]["readOnlyHint"] is False
    assert tools["review_episode"]["annotations"]["readOnlyHint"] is False
    for tool in (tools["search_traces"], tools["get_episode"]):
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["openWorldHint"] is False
        assert tool["annotations"]["idempotentHint"] is True
        assert tool["inputSchema"]["type"] == "object" and tool["description"]
    search = tools["search_traces"]
    assert search["inputSchema"]["required"] == ["query"]
    assert search["inputSchema"]["properties"]["k"] == {
        **search["inputSchema"]["properties"]["k"],
        "minimum": 1,
        "maximum": 5,
        "default": 3,
    }
    card_schema = _untitled(Card.json_schema())  # the card as distillers write it; titles are not schema
    assert search["outputSchema"]["properties"]["results"]["items"]["properties"]["card"] == card_schema
    assert tools["get_episode"]["outputSchema"]["properties"]["card"] == card_schema


def test_search_without_initialize_returns_cards_matching_the_output_schema(live: Live) -> None:
    _, _, body = post(live.url, rpc("tools/list"), live.auth())
    schema = {t["name"]: t["outputSchema"] for t in json.loads(body)["result"]["tools"]}
    result = live.call("search_traces", {"query": "pytest fixture not found after moving conftest"})["result"]
    assert result["isError"] is False
    jsonschema.validate(result["structuredContent"], schema["search_traces"])
    hits = result["structuredContent"]["results"]
    assert hits[0]["session_id"] == "alpha-pytest-fixture"
    assert all(h["card"]["outcome"] == "verified" for h in hits)
    text = result["content"][0]["text"]
    # an offline card's fields are shown as what the session said (present.EXTRACT_TITLES), never as lessons
    assert "alpha-pytest-fixture" in text and "The session said did not work" in text
    assert "The session suspected" in text and "Dead ends:" not in text
    episode = live.call("get_episode", {"session_id": "alpha-pytest-fixture"})["result"]
    assert episode["isError"] is False
    jsonschema.validate(episode["structuredContent"], schema["get_episode"])
    assert episode["structuredContent"]["card"]["critical_checks"]


def test_each_packed_card_stays_under_1500_chars(live: Live) -> None:
    result = live.call(
        "search_traces",
        {"query": "postgres refuses connections under load", "k": 5, "include_unverified": True},
    )["result"]
    blocks = result["content"][0]["text"].split("\n\n")[1:]
    assert blocks and all(len(b) <= 1500 for b in blocks)


def test_unverified_as_labelled_entries_cards_only_on_request_and_filters_apply(live: Live) -> None:
    query = {"query": "docker build permission denied writing npm cache"}
    default = live.call("search_traces", query)["result"]
    entry = next(
        h for h in default["structuredContent"]["results"] if h["session_id"] == "alpha-docker-cache"
    )
    assert entry["confidence"] != "strong"  # never a full card unless asked for
    assert "alpha-do" in default["content"][0]["text"] and "unverified" in default["content"][0]["text"]
    assert "the fix was never confirmed" in default["content"][0]["text"]
    verified_only = live.call("search_traces", {**query, "include_unverified": False})["result"]
    assert "alpha-docker-cache" not in [
        h["session_id"] for h in verified_only["structuredContent"]["results"]
    ]
    wide = live.call("search_traces", {**query, "include_unverified": True})["result"]["structuredContent"][
        "results"
    ]
    assert wide[0]["session_id"] == "alpha-docker-cache" and wide[0]["confidence"] == "strong"
    billing = live.call("search_traces", {"query": "too many clients postgres", "project": "shop"})["result"]
    assert all(h["project"] == "shop" for h in billing["structuredContent"]["results"])
    late = live.call("search_traces", {"query": "pytest fixture conftest", "since": "2026-03-01"})["result"]
    assert "alpha-pytest-fixture" not in [h["session_id"] for h in late["structuredContent"]["results"]]


def test_weak_matches_say_so_explicitly(live: Live) -> None:
    result = live.call("search_traces", {"query": NO_MATCH_QUERY})["result"]
    assert result["isError"] is False and result["structuredContent"]["results"] == []
    assert "No confident match" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "'query' is a required property"),
        ({"query": "x y z", "k": 9}, "k"),
        ({"query": "x y z", "k": "three"}, "k"),
        ({"query": ""}, "query"),
        ({"query": "x y z", "tags": "python"}, "tags"),
        ({"query": "x y z", "since": "last tuesday"}, "since"),
        ({"query": "x y z", "tenant_id": BETA}, "accepted arguments"),
    ],
)
def test_bad_arguments_are_tool_errors_the_agent_can_act_on(
    live: Live, arguments: dict, fragment: str
) -> None:
    result = live.call("search_traces", arguments)["result"]
    assert result["isError"] is True and "structuredContent" not in result
    text = result["content"][0]["text"]
    assert fragment in text and "search_traces" in text


def test_unknown_episode_is_a_tool_error(live: Live) -> None:
    result = live.call("get_episode", {"session_id": "nope"})["result"]
    assert result["isError"] is True and "search_traces" in result["content"][0]["text"]


def test_ping_and_request_answers_are_json(live: Live) -> None:
    status, headers, body = post(live.url, rpc("ping", msg_id="abc"), live.auth())
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert json.loads(body) == {"jsonrpc": "2.0", "id": "abc", "result": {}}


def test_other_paths_are_404(live: Live) -> None:
    status, _, _ = post(live.url.replace("/mcp", "/other"), rpc("ping"), live.auth())
    assert status == 404


def test_endpoint_without_authenticator_refuses_to_require_auth() -> None:
    with pytest.raises(ValueError):
        McpEndpoint(tools=None, authenticator=None)  # type: ignore[arg-type]


def test_server_binds_localhost_by_default(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    assert settings.host == "127.0.0.1" and settings.port == 8765 and settings.endpoint_url.endswith("/mcp")


def test_serve_runs_on_an_ephemeral_port_and_shuts_down(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from episodic.kernel.settings import load_settings
    from episodic.mcp.http_server import McpHttpServer, serve

    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    token = LocalTokenStore(episodic_home / "tokens.json").add(ALPHA)
    ready: list[McpHttpServer] = []
    started = threading.Event()

    def on_ready(httpd: McpHttpServer) -> None:
        ready.append(httpd)
        started.set()

    thread = threading.Thread(
        target=serve, args=(load_settings(), "127.0.0.1", 0), kwargs={"on_ready": on_ready}
    )
    thread.start()
    assert started.wait(30)
    url = ready[0].url
    status, _, body = post(url, rpc("ping"), {"Authorization": f"Bearer {token}"})
    assert status == 200 and json.loads(body)["result"] == {}
    ready[0].shutdown()
    thread.join(10)
    assert not thread.is_alive()
