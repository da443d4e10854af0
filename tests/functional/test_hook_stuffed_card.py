"""A card made of generic error words, recorded through `record_episode` into its own tenant, is never a full
card ("a close past match") for generic prompts through the prompt hook with the local judge on: the judge
says "relevant" for a shared topic, and a full card needs evidence beyond it.

The hook's budget and the judge's deadline are raised: this checks what is injected, not how fast."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.judge.model import default_model_dir
from episodic.judge.reranker import LocalReranker
from episodic.kernel.auth import READ, WRITE, LocalTokenStore
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer
from episodic.mcp.protocol import McpEndpoint
from episodic.mcp.record_tool import record_tool
from episodic.mcp.tools import ToolRegistry, read_tools
from kits.hook_kit import injected_context
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.skipif(
    not default_model_dir().is_dir(), reason="the judge's model is not installed (scripts/install)"
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_PROJECTS = FIXTURES / "transcripts" / "projects"
OTHER_PROJECTS = (
    FIXTURES / "eval" / "transcripts"
)  # more verified cards: the judge reads a pool, not one card
VERIFIED_SESSION = "11111111-1111-4111-8111-111111111111"  # a passing check after its last edit
TENANT = "stuffer"
GENERIC = "error exception failed failure crash bug broken fix fixed issue problem test tests build"
STUFFED: dict[str, Any] = {
    "session_id": VERIFIED_SESSION,
    "problem": f"{GENERIC}: the build fails with an error, the test is failing, fix the bug and the crash",
    "steps": [f"{GENERIC} debug error", f"fix the failing test error {GENERIC}", "fixed the build error"],
    "key_decisions": [f"fix the error and the failing test ({GENERIC})"],
    "insight": f"the error was a bug: fix the failing build and the failing test ({GENERIC})",
    "dead_ends": [f"the error exception crash was not fixed at first ({GENERIC})"],
    "misleading_intuitions": [f"the failing test looked like a flaky error ({GENERIC})"],
    "critical_checks": ["the failing test passed after the fix; the build has no error"],
    "outcome": "verified",
    "tags": ["error", "bug", "fix", "test", "build"],
}
PROMPTS = (
    "fix the failing test",
    "the build fails with an error after my change",
    "there is a bug, can you fix it",
    "the tests are failing again, please fix them",
    "I get an exception when I run it",
    "the app crashes on start, what is wrong",
    "something is broken after the last commit, fix it",
    "why does the build fail",
    "the test suite has errors now",
    "debug this error and make the tests pass",
)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, shared_embedding_cache: Path
) -> Iterator[tuple[str, str, Path]]:
    root = tmp_path_factory.mktemp("stuffed")
    user = root / "user-home"
    shutil.copytree(FIXTURE_PROJECTS, user / ".claude" / "projects")
    shutil.copytree(OTHER_PROJECTS, user / ".claude" / "projects", dirs_exist_ok=True)
    home = root / "episodic-home"
    settings = load_settings(
        home=home,
        user_home=str(user),
        claude_config_dir=str(user / ".claude"),
        xdg_config_home=str(user / ".config"),
        reranker="local",
        rerank_seconds=20.0,
        embedding_cache_dir=shared_embedding_cache,
    )
    memory = build_memory(settings)
    assert isinstance(memory.reranker, LocalReranker)
    assert index_sessions(memory, None, TENANT).indexed >= 6
    tokens = LocalTokenStore(settings.tokens_path)
    write_token, read_token = tokens.add(TENANT, WRITE), tokens.add(TENANT, READ)
    endpoint = McpEndpoint(ToolRegistry([*read_tools(memory), record_tool(memory)]), authenticator=tokens)
    with BackgroundServer(endpoint) as server:
        asyncio.run(_record(server.url, write_token))
        yield server.url, read_token, home


async def _record(url: str, token: str) -> None:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=60)
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:  # type: ignore[arg-type]
        recorded = await client.call_tool("record_episode", STUFFED)
    assert recorded.is_error is False, recorded.content[0].text  # type: ignore[union-attr]
    assert recorded.structured_content["outcome"] == "verified"


def test_a_card_of_generic_error_words_is_never_a_close_match(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    given = {p: injected_context(p, url, token, home, EPISODIC_HOOK_SCRATCH="false") for p in PROMPTS}
    assert any(
        VERIFIED_SESSION[:8] in context for context in given.values()
    )  # it is found: a pointer at most
    close = [p for p, context in given.items() if "A close past match" in context]
    assert close == [], close
