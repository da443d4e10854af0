"""An agent gets what it asks for (issue 38): a card the agent just recorded with `record_episode` comes back
from `search_traces`, called with its defaults through the official `mcp` client over real HTTP, for a plain
paraphrase of its problem (MiniLM, as a new user runs it); an unrelated question gets the explicit no-match
answer, and the hook's selection never turns a faint entry into an injected pointer."""

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
from episodic.hooks import packing as hook_packing
from episodic.hooks import server_client as hook_server
from episodic.kernel.auth import READ, WRITE, LocalTokenStore
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer
from episodic.mcp.protocol import McpEndpoint
from episodic.mcp.record_tool import record_tool
from episodic.mcp.tools import ToolRegistry, read_tools
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

FIXTURE_PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "projects"
SESSION = "11111111-1111-4111-8111-111111111111"  # its transcript has a passing check after its last edit
PROBLEM = "The web server refuses to start in development and the terminal shows nothing useful"
PARAPHRASE = "dev server exits silently right after launch"
UNRELATED = "How do I keep a sourdough starter alive over a two-week holiday without a fridge?"
TENANT = "local"


@dataclass
class Served:
    url: str
    write_token: str
    read_token: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("paraphrase")
    user = root / "user-home"
    shutil.copytree(FIXTURE_PROJECTS, user / ".claude" / "projects")  # the session the agent is in
    settings = load_settings(
        home=root / "episodic-home",
        user_home=str(user),
        claude_config_dir=str(user / ".claude"),
        xdg_config_home=str(user / ".config"),
    )
    memory = build_memory(settings)  # the default embedder (MiniLM), nothing indexed yet
    tokens = LocalTokenStore(settings.tokens_path)
    registry = ToolRegistry([*read_tools(memory), record_tool(memory)])
    with BackgroundServer(McpEndpoint(registry, authenticator=tokens)) as server:
        yield Served(server.url, tokens.add(TENANT, WRITE), tokens.add(TENANT, READ))


async def _call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:  # type: ignore[arg-type]
        return await client.call_tool(name, arguments)


def call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    return asyncio.run(_call(url, token, name, arguments))


def recorded_card() -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "problem": PROBLEM,
        "steps": [
            "ran the server with verbose logging to see how far start-up got",
            "found the port taken by a leftover process from an earlier run",
        ],
        "key_decisions": ["fail loudly when the port is taken instead of exiting with status zero"],
        "insight": "the server exited quietly because its port was still held by an earlier run",
        "dead_ends": ["reinstalling the dependencies changed nothing"],
        "misleading_intuitions": ["the empty terminal looked like a crash in the framework"],
        "critical_checks": ["the server started and answered once the old process was stopped"],
        "outcome": "verified",
        "tags": ["server", "startup"],
    }


def test_a_just_recorded_card_is_found_by_a_paraphrase_of_its_problem(served: Served) -> None:
    recorded = call(served.url, served.write_token, "record_episode", recorded_card())
    assert not recorded.is_error, recorded.content
    found = call(served.url, served.read_token, "search_traces", {"query": PARAPHRASE})
    assert not found.is_error
    results = found.structured_content["results"]
    assert [r["session_id"] for r in results][:1] == [SESSION]
    assert results[0]["confidence"] in ("strong", "weak", "faint")
    assert results[0]["card"]["outcome"] == "verified"  # the session's own passing check stands behind it
    text = found.content[0].text
    assert SESSION[:8] in text and "No confident match" not in text
    # the entry says what the session was about in the card's own words
    assert PROBLEM in text or results[0]["confidence"] == "strong"


def test_an_unrelated_question_gets_the_explicit_no_match_answer(served: Served) -> None:
    call(served.url, served.write_token, "record_episode", recorded_card())
    found = call(served.url, served.read_token, "search_traces", {"query": UNRELATED})
    assert found.structured_content["results"] == []
    assert "No confident match" in found.content[0].text


def test_the_hook_injects_no_faint_entry_and_one_card_at_most() -> None:
    card = {"outcome": "verified", "problem": "p"}
    results = [
        {"session_id": "a" * 8, "confidence": "strong", "card": card},
        {"session_id": "b" * 8, "confidence": "strong", "card": card},
        {"session_id": "c" * 8, "confidence": "faint", "card": card},
        {"session_id": "d" * 8, "confidence": "weak", "card": card},
        {"session_id": "e" * 8, "confidence": "weak", "card": card},
    ]
    selected = hook_server.select_hits(results, approved_only=False)
    assert [(h["session_id"][0], h["confidence"]) for h in selected] == [
        ("a", "strong"),
        ("b", "weak"),
        ("d", "weak"),
    ]
    assert hook_server.select_hits([results[2]], approved_only=False) == []


def test_pointers_say_what_the_session_was_about() -> None:
    long_problem = (
        "Go version mismatch: the CI image built with Go 1.24 while go.mod asks for 1.25.6, so every job "
        "failed at the toolchain download step before any test ran. Later the lint step failed too."
    )
    line = hook_packing.pointer_line(
        {"session_id": "967e501d-aaaa", "date": "2026-02-02", "card": {"problem": long_problem}}
    )
    assert line.startswith("- 2026-02-02 967e501d Go version mismatch")
    assert "Later the lint" not in line and len(line) <= 24 + 120
    assert line.endswith("…") or line.endswith(".")
