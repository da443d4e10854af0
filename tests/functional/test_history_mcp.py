"""The history MCP tools: the official client lists and calls each over HTTP and stdio; every tool keeps to
the caller's tenant; results stay within the budget; `link_work_item` needs the write scope."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from episodic.history.service import kept_history
from episodic.history.tools import STRUCTURED_BUDGET, TEXT_BUDGET, budgeted
from episodic.kernel.auth import READ, WRITE, LocalTokenStore, Principal
from episodic.kernel.errors import ScopeError
from episodic.kernel.models import LOCAL_TENANT
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.mcp.tools import default_registry
from kits.history_kit import RECORDS, history_memory
from kits.mcp_testkit import ALPHA, BETA
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

HISTORY_TOOLS = {
    "history_search": {"topic": "worktree"},
    "history_thread": {"topic": "worktree"},
    "history_query": {"topic": "worktree", "context": 1},
    "history_decisions": {"topic": "pool"},
    "history_timeline": {},
    "work_item_sessions": {"target": "ENT-297"},
    "link_work_item": {"session_id": "alpha-docker-cache", "item": "#41"},
}


def _call(registry: Any, name: str, args: dict[str, Any], tenant: str, scope: str = WRITE) -> dict[str, Any]:
    scopes = frozenset({READ, WRITE}) if scope == WRITE else frozenset({READ})
    return registry.call(name, args, Principal(tenant_id=tenant, scopes=scopes))  # type: ignore[no-any-return]


def test_every_history_tool_keeps_to_the_callers_tenant(tmp_path: Path) -> None:
    memory = history_memory(tmp_path / "home")

    kept_history(memory).add_links(  # type: ignore[union-attr]
        [
            link.model_copy(update={"tenant_id": BETA, "session_id": "beta-pytest-fixture"})
            for link in kept_history(memory).links(ALPHA, session_id="alpha-pytest-fixture")
        ]  # type: ignore[union-attr]
    )
    registry = default_registry(memory)
    alpha_ids = {r.session_id for r in RECORDS if r.tenant_id == ALPHA}
    beta_ids = {r.session_id for r in RECORDS if r.tenant_id == BETA}
    for name, args in HISTORY_TOOLS.items():
        for tenant, own, other in ((ALPHA, alpha_ids, beta_ids), (BETA, beta_ids, alpha_ids)):
            args_here = dict(args)
            if name == "link_work_item":
                args_here["session_id"] = sorted(own)[0]
            result = _call(registry, name, args_here, tenant)
            assert result["isError"] is False, (name, result)
            dumped = json.dumps(result)
            assert not any(sid in dumped for sid in other), (
                f"{name} as {tenant} leaked another tenant's session"
            )
            assert "beta secret" not in dumped or tenant == BETA
    # links recorded by one tenant are invisible to the other
    seen = _call(registry, "work_item_sessions", {"target": "#41"}, BETA)
    assert seen["structuredContent"]["links"] == [] or all(
        x["tenant_id"] == BETA for x in seen["structuredContent"]["links"]
    )


def test_link_needs_the_write_scope_and_bad_items_are_tool_errors(tmp_path: Path) -> None:
    registry = default_registry(history_memory(tmp_path / "home"))
    with pytest.raises(ScopeError):
        _call(registry, "link_work_item", {"session_id": "s", "item": "#1"}, ALPHA, scope=READ)
    bad = _call(registry, "link_work_item", {"session_id": "alpha-docker-cache", "item": "no item"}, ALPHA)
    assert bad["isError"] is True and "not a work item" in bad["content"][0]["text"]
    week = _call(registry, "history_timeline", {"week": "2026-W99"}, ALPHA)
    assert week["isError"] is True and "ISO week" in week["content"][0]["text"]


def test_results_stay_within_the_budget_and_say_when_cut() -> None:
    rows = [{"session_id": f"s{i}", "snippet": "x" * 500} for i in range(200)]
    out = budgeted("y" * (TEXT_BUDGET * 2), {"results": rows}, "results")
    assert out.structured is not None and out.structured["truncated"] is True
    assert len(out.text) <= TEXT_BUDGET + 200 and "truncated" in out.text
    assert len(json.dumps(out.structured)) <= STRUCTURED_BUDGET
    small = budgeted("ok", {"results": rows[:2]}, "results")
    assert small.structured == {"results": rows[:2], "truncated": False}


async def _use_every_tool(client: Client, session_id: str) -> set[str]:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert set(HISTORY_TOOLS) <= tools
    for name, args in HISTORY_TOOLS.items():
        args = {**args, "session_id": session_id} if name == "link_work_item" else args
        result = await client.call_tool(name, args)
        assert result.is_error is False, (name, result.content)
        assert result.structured_content is not None
    found = await client.call_tool("history_search", {"topic": "worktree"})
    return {r["session_id"] for r in found.structured_content["results"]}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    memory = history_memory(tmp_path_factory.mktemp("history-sdk"))
    token = LocalTokenStore(memory.settings.tokens_path).add(ALPHA, scope=WRITE)
    with BackgroundServer(build_endpoint(memory.settings, memory)) as srv:
        yield srv.url, token


def test_sdk_client_calls_every_history_tool_over_http(http_server: tuple[str, str]) -> None:
    url, token = http_server

    async def run() -> set[str]:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=30)
        )
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:  # type: ignore[arg-type]
            return await _use_every_tool(client, "alpha-docker-cache")

    assert asyncio.run(run()) == {"alpha-pytest-fixture", "alpha-postgres-pool"}


def test_sdk_client_calls_every_history_tool_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    memory = history_memory(home)
    assert kept_history(memory) is not None
    for r in RECORDS:  # the stdio server answers for the local tenant
        kept_history(memory).put(r.model_copy(update={"tenant_id": LOCAL_TENANT}))
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hashing", "HOME": str(tmp_path)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})  # the code under test
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "episodic", "mcp"], env=env, cwd=os.getcwd()
    )

    async def run() -> set[str]:
        async with Client(stdio_client(params), mode="legacy") as client:  # type: ignore[arg-type]
            return await _use_every_tool(client, "alpha-docker-cache")

    assert "beta-postgres-pool" in asyncio.run(run())
