"""The official `mcp` SDK client (2.3.0) against our server: HTTP (legacy and auto modes) and stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.models import LOCAL_TENANT
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.mcp_testkit import ALPHA, build_memory, populate, settings_for
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

QUERY = "pytest cannot find fixture after moving conftest"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    home = tmp_path_factory.mktemp("sdk-home")
    settings = settings_for(home)
    memory = build_memory(settings)
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    with BackgroundServer(build_endpoint(settings, memory)) as srv:
        yield srv.url, token


async def _session(client: Client, expect_session: str = "alpha-pytest-fixture") -> dict[str, Any]:
    tools = await client.list_tools()
    names = {t.name: t for t in tools.tools}
    assert {"search_traces", "get_episode"} <= set(names)
    assert names["search_traces"].annotations.read_only_hint is True
    found = await client.call_tool("search_traces", {"query": QUERY})
    assert found.is_error is False
    results = found.structured_content["results"]
    assert results[0]["session_id"] == expect_session
    assert expect_session in found.content[0].text
    episode = await client.call_tool("get_episode", {"session_id": expect_session})
    assert episode.is_error is False and episode.structured_content["session_id"] == expect_session
    bad = await client.call_tool("search_traces", {"query": QUERY, "k": 42})
    assert bad.is_error is True and "k" in bad.content[0].text
    return {"version": client.protocol_version}


async def _over_http(url: str, token: str | None, mode: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=30))
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        return await _session(client)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_over_http(server: tuple[str, str], mode: str) -> None:
    url, token = server
    outcome = asyncio.run(_over_http(url, token, mode))
    assert outcome["version"] == "2025-11-25"


def _auth_error(exc: BaseException) -> MCPError | None:
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _auth_error(inner)
        if found:
            return found
    return _auth_error(exc.__cause__) if exc.__cause__ else None


@pytest.mark.parametrize("token", [None, "epi_wrong-token"])
def test_sdk_client_is_refused_without_a_valid_token(server: tuple[str, str], token: str | None) -> None:
    url, _ = server
    with pytest.raises(BaseException) as caught:
        asyncio.run(_over_http(url, token, "legacy"))
    error = _auth_error(caught.value)
    assert error is not None and "bearer token" in str(error)


def test_sdk_client_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = settings_for(home)
    memory = build_memory(settings)
    populate(memory, [(LOCAL_TENANT, *rest) for _, *rest in memory_episodes()])
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hashing", "HOME": str(tmp_path)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "episodic", "mcp"], env=env, cwd=os.getcwd()
    )

    async def run() -> dict[str, Any]:
        async with Client(stdio_client(params), mode="legacy") as client:  # type: ignore[arg-type]
            return await _session(client)

    assert asyncio.run(run())["version"] == "2025-11-25"


def memory_episodes() -> list[tuple[Any, ...]]:
    from kits.mcp_testkit import EPISODES

    return [e for e in EPISODES if e[0] == ALPHA]
