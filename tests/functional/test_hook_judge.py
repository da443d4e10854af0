"""The hook with the local judge on, over the real transcripts with the LLM-written dev cards (the card kind
the judge reads): a positive prompt gets its target as a close match, an unrelated prompt nothing.

The hook's budget and the judge's deadline are raised: this checks what is injected, not how fast
(scripts/bench_hook.py --reranker local)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.judge.model import default_model_dir
from episodic.judge.reranker import LocalReranker
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits import warm_cli
from kits.hook_kit import injected_context

pytestmark = [
    pytest.mark.transcripts,
    pytest.mark.skipif(
        not default_model_dir().is_dir(), reason="the judge's model is not installed (scripts/install)"
    ),
]

UNRELATED = "How do I keep a sourdough starter alive over a two-week holiday without a fridge?"
# dev-queries d067 and its target session
POSITIVE = "chunking a JSONL transcript: one line bigger than the max chunk size just passes through unchecked; what should happen with oversized lines?"
TARGET = "0a0314fb"


@pytest.fixture(scope="module")
def served(
    transcripts_dir: Path, tmp_path_factory: pytest.TempPathFactory, shared_embedding_cache: Path
) -> Iterator[tuple[str, str, Path]]:
    cards = transcripts_dir.parent / "eval" / "cards"
    if not cards.is_dir():
        pytest.skip(f"the LLM-written dev cards are not at {cards}")
    home = tmp_path_factory.mktemp("judged") / "episodic-home"
    home.mkdir()
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    env["EPISODIC_EMBEDDING_CACHE_DIR"] = str(shared_embedding_cache)
    env.pop("CLAUDE_CONFIG_DIR", None)
    for command in (["index", str(transcripts_dir)], ["cards", "import", str(cards), str(transcripts_dir)]):
        done = warm_cli.run(
            [sys.executable, "-m", "episodic", *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert done.returncode == 0, done.stderr
    settings = load_settings(home=home, reranker="local", rerank_seconds=20.0)
    memory = build_memory(settings)
    assert isinstance(memory.reranker, LocalReranker)
    token = LocalTokenStore(settings.tokens_path).add("local")
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        yield server.url, token, home


def hook(prompt: str, url: str, token: str, home: Path) -> str:
    return injected_context(prompt, url, token, home, EPISODIC_HOOK_SCRATCH="false")


def test_an_unrelated_prompt_injects_nothing(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    assert hook(UNRELATED, url, token, home) == ""


def test_a_positive_prompt_surfaces_its_target_as_a_close_match(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    context = hook(POSITIVE, url, token, home)
    assert "A close past match" in context and TARGET in context
