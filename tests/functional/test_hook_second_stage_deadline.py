"""Issue 52 item 14, through the hook as Claude Code runs it: a second stage that does not answer within
`rerank_seconds` (a judge on a saturated CPU, a slow Bedrock Rerank call) no longer silences the hook; the
first stage's card is injected within the hook's own 1.5 s budget."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.models import SearchHit
from episodic.kernel.ports import Reranker
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.hook_kit import injected_context
from kits.mcp_testkit import ALPHA, build_memory, populate

PROMPT = "pytest cannot find a fixture after moving conftest"


class StuckReranker(Reranker):
    """Answers only when its caller gives up on it (or after a minute)."""

    name = "stuck"
    depth = 20

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.asked = 0

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        self.asked += 1
        self.cancelled.wait(timeout=60)
        return list(reversed(hits))

    def cancel(self) -> None:
        self.cancelled.set()


def test_a_stuck_second_stage_leaves_the_hook_the_first_stages_card(tmp_path: Path) -> None:
    settings = load_settings(
        home=tmp_path / "home", embedder="hashing", rerank_seconds=0.5, min_similarity=-1.0
    )
    memory = build_memory(settings)
    populate(memory)
    stuck = StuckReranker()
    memory.reranker = stuck
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    try:
        with BackgroundServer(build_endpoint(settings, memory)) as server:
            context = injected_context(
                PROMPT,
                server.url,
                token,
                settings.home,
                EPISODIC_HOOK_BUDGET_SECONDS="1.5",
                EPISODIC_HOOK_SCRATCH="false",
            )
    finally:
        stuck.cancel()  # never leave the server's thread waiting
    assert stuck.asked >= 1  # the search did reach the second stage
    assert "pytest cannot find a fixture" in context  # the first stage's answer, not silence
    log = (settings.home / "logs" / "hook.log").read_text()
    assert "timed out" not in log
