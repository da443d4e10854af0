"""`record_episode` through the official `mcp` client over real HTTP: scopes, card rules, the evidence
check against the session's own transcript, and the new card found by the next `search_traces`."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.auth import READ, WRITE, LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer
from episodic.mcp.protocol import McpEndpoint
from episodic.mcp.record_tool import record_tool
from episodic.mcp.tools import ToolRegistry, read_tools
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

FIXTURE_PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "projects"
VERIFIED_SESSION = "11111111-1111-4111-8111-111111111111"  # a passing check after its last edit
UNVERIFIED_SESSION = "22222222-2222-4222-8222-222222222222"  # edits, no passing check after them
TENANT = "team"


@dataclass
class Server:
    url: str
    write_token: str
    read_token: str
    memory: Memory


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("record")
    user = root / "user-home"
    shutil.copytree(FIXTURE_PROJECTS, user / ".claude" / "projects")  # the repo's own small fixtures
    settings = load_settings(
        home=root / "episodic-home",
        embedder="hashing",
        user_home=str(user),
        claude_config_dir=str(user / ".claude"),
        xdg_config_home=str(user / ".config"),
    )
    memory = build_memory(settings, embedder=HashingEmbedder(settings.hashing_dimension))
    report = index_sessions(memory, None, TENANT)  # heuristic cards first: record_episode replaces them
    assert report.indexed >= 2, report.as_dict()
    tokens = LocalTokenStore(settings.tokens_path)
    write_token, read_token = tokens.add(TENANT, WRITE), tokens.add(TENANT, READ)
    registry = ToolRegistry([*read_tools(memory), record_tool(memory)])
    endpoint = McpEndpoint(registry, authenticator=tokens)
    with BackgroundServer(endpoint) as srv:
        yield Server(srv.url, write_token, read_token, memory)


def card(session_id: str, **changes: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "session_id": session_id,
        "problem": "the settings page showed a stale plan name after upgrading the subscription",
        "steps": [
            "reproduced by upgrading a test account and reloading the settings page",
            "found the plan name cached per browser session",
            "invalidated the cached plan when the billing webhook arrives",
        ],
        "key_decisions": ["invalidate on the webhook rather than shorten the cache, to keep pages fast"],
        "insight": "the plan name was cached for the whole browser session and never invalidated on upgrade",
        "dead_ends": ["clearing the CDN cache changed nothing: the stale value came from the app cache"],
        "misleading_intuitions": ["the billing webhook looked late, but it arrived within a second"],
        "critical_checks": ["the upgrade flow test passed after the change"],
        "outcome": "verified",
        "tags": ["caching", "billing", "webhooks"],
    }
    args.update(changes)
    return args


async def _call(url: str, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=30)
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:  # type: ignore[arg-type]
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def call(srv: Server, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    return asyncio.run(_call(srv.url, token, *calls))


def test_tool_is_listed_with_its_schema(server: Server) -> None:
    async def listed() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.read_token}"})
        async with (
            http,
            Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
        ):  # type: ignore[arg-type]
            return (await client.list_tools()).tools

    tool = next(t for t in asyncio.run(listed()) if t.name == "record_episode")
    assert tool.annotations is not None and tool.annotations.read_only_hint is False
    assert {"session_id", "problem", "outcome"} <= set(tool.input_schema["required"])


def test_write_token_records_a_verified_card_and_search_finds_it(server: Server) -> None:
    assert server.memory.store.get(TENANT, VERIFIED_SESSION).distiller.kind == "heuristic"  # type: ignore[union-attr]
    recorded, found = call(
        server,
        server.write_token,
        ("record_episode", card(VERIFIED_SESSION)),
        ("search_traces", {"query": "stale plan name shown after upgrading the subscription"}),
    )
    assert recorded.is_error is False, recorded.content[0].text
    result = recorded.structured_content
    assert result["outcome"] == "verified" and result["distiller"] == "self"
    assert str(result["replaced"]).startswith("heuristic") and result["transcript_found"] is True
    stored = server.memory.store.get(TENANT, VERIFIED_SESSION)
    assert stored is not None and stored.distiller.kind == "self" and stored.project == "my app_v2.0"
    assert found.is_error is False
    assert found.structured_content["results"][0]["session_id"] == VERIFIED_SESSION
    assert "stale plan name" in found.content[0].text


def test_read_token_is_refused_with_a_tool_error(server: Server) -> None:
    before = server.memory.store.get(TENANT, UNVERIFIED_SESSION)
    (refused,) = call(server, server.read_token, ("record_episode", card(UNVERIFIED_SESSION)))
    assert refused.is_error is True
    assert "write scope" in refused.content[0].text and "--scope write" in refused.content[0].text
    assert server.memory.store.get(TENANT, UNVERIFIED_SESSION) == before


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("steps", ["edited src/billing/plan_cache.py to drop the entry"], "file path"),
        ("insight", "Traceback (most recent call last): the cache raised", "stack trace"),
    ],
)
def test_card_breaking_the_rules_is_rejected(server: Server, field: str, value: Any, kind: str) -> None:
    before = server.memory.store.get(TENANT, UNVERIFIED_SESSION)
    (rejected,) = call(
        server, server.write_token, ("record_episode", card(UNVERIFIED_SESSION, **{field: value}))
    )
    assert rejected.is_error is True
    text = rejected.content[0].text
    assert "rejected" in text and kind in text and field in text
    assert server.memory.store.get(TENANT, UNVERIFIED_SESSION) == before


def test_unsupported_verified_is_downgraded_by_the_transcript(server: Server) -> None:
    (recorded,) = call(server, server.write_token, ("record_episode", card(UNVERIFIED_SESSION)))
    assert recorded.is_error is False
    assert recorded.structured_content["outcome"] == "unverified"
    assert recorded.structured_content["transcript_found"] is True
    assert "downgraded verified -> unverified" in recorded.content[0].text
    stored = server.memory.store.get(TENANT, UNVERIFIED_SESSION)
    assert (
        stored is not None and stored.card.outcome.value == "unverified" and stored.distiller.kind == "self"
    )


def test_verified_without_a_transcript_is_downgraded_and_said(server: Server) -> None:
    session = "33333333-3333-4333-8333-333333333333"
    (recorded,) = call(server, server.write_token, ("record_episode", card(session)))
    assert recorded.is_error is False
    assert recorded.structured_content["outcome"] == "unverified"
    assert (
        recorded.structured_content["transcript_found"] is False
        and recorded.structured_content["replaced"] is None
    )
    assert "transcript was not found" in recorded.content[0].text


def test_secrets_are_scrubbed_and_bad_session_ids_refused(server: Server) -> None:
    session = "44444444-4444-4444-8444-444444444444"
    secret = "AKIA" + "Z7QWERTYUIOPASDF"
    (recorded, bad_id) = call(
        server,
        server.write_token,
        ("record_episode", card(session, outcome="informational", insight=f"the key {secret} was revoked")),
        ("record_episode", card("../../etc/passwd")),
    )
    assert recorded.is_error is False
    stored = server.memory.store.get(TENANT, session)
    assert stored is not None and secret not in stored.card.insight and "[REDACTED:" in stored.card.insight
    assert bad_id.is_error is True and "session id" in bad_id.content[0].text


def test_remember_command_file_is_installed_once_and_names_the_session(tmp_path: Path) -> None:
    from episodic.cli.remember import RECORD_TOOL, REMEMBER_COMMAND
    from episodic.cli.setup_clients import remember_command_file, write_missing_file

    planned = remember_command_file(tmp_path)
    assert planned.path == tmp_path / ".claude" / "commands" / "remember.md"
    header, body = REMEMBER_COMMAND.split("---\n")[1:3]
    fields = dict(line.split(": ", 1) for line in header.strip().splitlines())
    assert fields["allowed-tools"] == RECORD_TOOL == "mcp__episodic__record_episode"
    assert fields["disable-model-invocation"] == "true" and fields["description"]
    # Claude Code substitutes these two in command files (checked against claude 2.1.197)
    assert "`${CLAUDE_SESSION_ID}`" in body and "$ARGUMENTS" in body
    for rule in (
        "SYMPTOM",
        "METHOD, not the code",
        "dead_ends",
        "misleading_intuitions",
        "AFTER the last change",
    ):
        assert rule in body
    assert write_missing_file(planned).changed is True
    planned.path.write_text("my own edits", encoding="utf-8")
    assert write_missing_file(planned).changed is False  # never overwrites the user's file
    assert planned.path.read_text(encoding="utf-8") == "my own edits"


def test_stdio_writes_as_the_local_tenant(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """`episodic mcp` needs no token: the local tenant, write allowed (the stdio face's own principal)."""
    import io
    import json
    import sys

    from episodic.kernel.models import LOCAL_TENANT
    from episodic.mcp import stdio, tools

    memory = server.memory
    monkeypatch.setattr(tools, "default_registry", lambda m: ToolRegistry([*read_tools(m), record_tool(m)]))
    session = "55555555-5555-4555-8555-555555555555"
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "record_episode", "arguments": card(session, outcome="failed")},
    }
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request) + "\n"))
    monkeypatch.setattr(sys, "stdout", out)
    stdio.serve_stdio(memory.settings, memory)
    answer = json.loads(out.getvalue())
    assert answer["result"]["isError"] is False, answer
    stored = memory.store.get(LOCAL_TENANT, session)
    assert stored is not None and stored.distiller.kind == "self" and stored.card.outcome.value == "failed"
    assert memory.store.get(TENANT, session) is None  # tenants never mix
