"""Injection records through the faces an agent and a person meet: the prompt hook as Claude Code runs it (a
subprocess over the served demo index), get_episode through the official MCP client, the receiving session's
transcript indexed by `episodic index`, and `episodic injections`. A pointer opened with get_episode is
recorded as opened, a card never referenced as ignored; no card twice in a session; another tenant sees no
record; retention removes old records."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from episodic.assembly import build_memory
from episodic.injections.sqlite_store import INJECTIONS_FILE, SQLiteInjectionStore
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.injection_port import InjectionRecord, prompt_hash
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from fakes.injection_records import given_record
from kits.client_env import PROMPT, episodic, index_demo, isolate
from kits.hook_kit import injected_context
from kits.session_builder import SessionWriter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

CONFIG = 'embedder = "hashing"\nreranker = "none"\nexperiment_enabled = false\n'
OPENER = "3c1d7e52-0a8b-4f61-9d2e-6b5a4c3f2e10"  # the session that opens its pointer
IGNORER = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"  # the session that never refers to what it got


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home, done = index_demo(tmp_path_factory.mktemp("injections"), CONFIG)
    assert done.returncode == 0, done.stderr
    with pytest.MonkeyPatch.context() as env:
        isolate(env, home)
        settings = load_settings(home=home)
        tokens = LocalTokenStore(settings.tokens_path)
        local, beta = tokens.add("local"), tokens.add("beta")
        with BackgroundServer(build_endpoint(settings, build_memory(settings))) as server:
            yield {"home": home, "url": server.url, "local": local, "beta": beta}


def hook(served: dict[str, Any], session_id: str, token: str | None = None) -> str:
    """The hook's additionalContext for the demo prompt in `session_id` ('' when it injects nothing)."""
    token = token or served["local"]
    return injected_context(
        PROMPT, served["url"], token, served["home"], session_id, EPISODIC_HOOK_SCRATCH="false"
    )


def records(served: dict[str, Any], tenant: str, session_id: str) -> list[InjectionRecord]:
    store = SQLiteInjectionStore(served["home"] / INJECTIONS_FILE)
    try:
        return store.of_session(tenant, session_id)
    finally:
        store.close()


def get_episode(served: dict[str, Any], session_id: str) -> dict[str, Any]:
    """get_episode through the official MCP client, as an agent calls it."""

    async def call() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {served['local']}"}
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=30))
        async with (
            http,
            Client(streamable_http_client(served["url"], http_client=http), mode="legacy") as client,
        ):  # type: ignore[arg-type]
            result = await client.call_tool("get_episode", {"session_id": session_id})
            assert result.is_error is False, result.content
            return dict(result.structured_content or {})

    return asyncio.run(call())


def write_session(folder: Path, session_id: str, opened: str | None) -> None:
    """The receiving session's transcript: the prompt now (the hook's moment), then (when `opened`) the agent's
    get_episode on that id, then a reply that names nothing of what it was given."""
    writer = SessionWriter(session_id, "2026-01-01", cwd="/home/dev/webshop").prompt(PROMPT)
    if opened:
        writer.tool("mcp__episodic__get_episode", {"session_id": opened}, "Episode card ...")
    writer.reply("I changed the workflow file.").prompt("thanks, looks good").reply("Great.")
    now = datetime.now(UTC)
    for n, line in enumerate(writer.lines):
        line["timestamp"] = (now + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
    writer.write(folder)


def test_the_same_card_is_never_given_twice_in_a_session(served: dict[str, Any]) -> None:
    first = hook(served, "a1b2c3d4-0000-4000-8000-000000000001")
    given = records(served, "local", "a1b2c3d4-0000-4000-8000-000000000001")
    card = next(r.card_id for r in given if r.tier == "card")
    assert "A close past match" in first and card in first
    again = hook(served, "a1b2c3d4-0000-4000-8000-000000000001")
    assert card not in again and "A close past match" not in again
    assert [r.card_id for r in records(served, "local", "a1b2c3d4-0000-4000-8000-000000000001")].count(
        card
    ) == 1
    other = hook(served, "a1b2c3d4-0000-4000-8000-000000000002")  # another session gets it
    assert card in other
    assert all(r.prompt_sha256 == prompt_hash(PROMPT) for r in given)  # a hash, never the prompt


def test_another_tenant_never_sees_a_record(served: dict[str, Any]) -> None:
    session = "b0b0b0b0-0000-4000-8000-000000000003"
    assert hook(served, session) != ""
    assert hook(served, session, token=served["beta"]) == ""  # beta has no cards, and no record of alpha's
    assert records(served, "beta", session) == [] and records(served, "local", session) != []
    with pytest.MonkeyPatch.context() as env:
        isolate(env, served["home"])
        beta = json.loads(episodic("injections", "--tenant", "beta", "--json").stdout)
        local = json.loads(episodic("injections", "--tenant", "local", "--json").stdout)
        stats = episodic("stats").stdout
    assert beta["records"] == 0 and local["records"] > 0
    line = next(x for x in stats.splitlines() if x.startswith("injections: "))
    assert f"{local['records']} in {local['sessions']} sessions over 30 days" in line  # the configured tenant


# indexes the receiving sessions (whose prompt is the demo prompt, so they become its closest cards): after the
# tests that need the demo prompt answered by the demo cards
def test_an_opened_pointer_is_opened_and_an_unused_card_is_ignored(
    served: dict[str, Any], tmp_path: Path
) -> None:
    hook(served, OPENER)
    hook(served, IGNORER)
    given = records(served, "local", OPENER)
    pointer = next(r.card_id for r in given if r.tier == "pointer")
    card = next(r.card_id for r in given if r.tier == "card")
    assert get_episode(served, pointer[:8])["session_id"] == pointer
    write_session(tmp_path / "sessions", OPENER, opened=pointer[:8])
    write_session(tmp_path / "sessions", IGNORER, opened=None)
    with pytest.MonkeyPatch.context() as env:
        isolate(env, served["home"])
        done = episodic("index", str(tmp_path / "sessions"))
        assert done.returncode == 0, done.stderr
        summary = json.loads(episodic("injections", "--json").stdout)
    uses = {(r.card_id, r.tier): r.use for r in records(served, "local", OPENER)}
    assert uses[(pointer, "pointer")] == "opened"
    assert uses[(card, "card")] == "ignored"
    assert {r.use for r in records(served, "local", IGNORER)} == {"ignored"}
    assert summary["by_use"]["opened"] >= 1 and summary["by_use"]["ignored"] >= 2
    assert summary["share_by_rule"]["opened"] > 0


def test_retention_removes_old_records(served: dict[str, Any], tmp_path: Path) -> None:
    store = SQLiteInjectionStore(served["home"] / INJECTIONS_FILE)
    old = given_record(
        "local",
        "c0c0c0c0-0000-4000-8000-000000000004",
        "some-card",
        at=datetime.now(UTC) - timedelta(days=91),
    )
    store.add("local", [old, old.model_copy(update={"at": datetime.now(UTC), "card_id": "kept-card"})])
    store.close()
    (tmp_path / "nothing").mkdir()
    with pytest.MonkeyPatch.context() as env:
        isolate(env, served["home"])
        done = episodic("index", str(tmp_path / "nothing"))  # every index run applies the retention
        assert done.returncode == 0, done.stderr
    kept = {r.card_id for r in records(served, "local", old.session_id)}
    assert kept == {"kept-card"}
