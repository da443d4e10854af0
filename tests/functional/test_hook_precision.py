"""The right episode or silence, through the real hook command over the real transcripts (MiniLM, as the
product runs): an unrelated prompt injects nothing, an in-domain negative (a problem no session covers,
from the dev negatives) gets no full card, a positive prompt surfaces its target as a close match.

The hook's budget is raised (20 s): this checks what is injected, not how fast (scripts/bench_hook.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits import warm_cli
from kits.hook_kit import injected_context

pytestmark = pytest.mark.transcripts

UNRELATED = "How do I keep a sourdough starter alive over a two-week holiday without a fridge?"
# dev-negatives n007: shell completion is a real session's component (61cb3ba8), a slow shell start is not
NEGATIVE = "every new zsh window opens about a second slower since I let the CLI set up tab completion"
# dev-queries d067 and its target session
POSITIVE = "chunking a JSONL transcript: one line bigger than the max chunk size just passes through unchecked; what should happen with oversized lines?"
TARGET = "0a0314fb"


@pytest.fixture(scope="module")
def served(
    transcripts_dir: Path, tmp_path_factory: pytest.TempPathFactory, shared_embedding_cache: Path
) -> Iterator[tuple[str, str, Path]]:
    home = tmp_path_factory.mktemp("precision") / "episodic-home"
    home.mkdir()
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    env["EPISODIC_EMBEDDING_CACHE_DIR"] = str(shared_embedding_cache)
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "index", str(transcripts_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    settings = load_settings(home=home)
    token = LocalTokenStore(settings.tokens_path).add("local")
    with BackgroundServer(build_endpoint(settings, build_memory(settings))) as server:
        yield server.url, token, home


def hook(prompt: str, url: str, token: str, home: Path) -> str:
    return injected_context(prompt, url, token, home, EPISODIC_HOOK_SCRATCH="false")


def test_an_unrelated_prompt_injects_nothing(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    assert hook(UNRELATED, url, token, home) == ""
    assert "no confident or weak match" in (home / "logs" / "hook.log").read_text()


def test_an_in_domain_negative_gets_no_card(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    context = hook(NEGATIVE, url, token, home)
    assert "A close past match" not in context  # at most pointers, marked as weak
    assert len(context) < 600


def test_a_positive_prompt_surfaces_its_target_as_a_close_match(served: tuple[str, str, Path]) -> None:
    url, token, home = served
    context = hook(POSITIVE, url, token, home)
    assert "A close past match" in context and TARGET in context
