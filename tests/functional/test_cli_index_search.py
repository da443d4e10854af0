"""The main job through the `episodic` entry point: index, search --json, re-index unchanged, quickstart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.kernel.models import Card
from kits import warm_cli

CARD_FIELDS = set(Card.model_fields)
DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


def run(args: list[str], home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home"), **extra}
    env.pop("CLAUDE_CONFIG_DIR", None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.transcripts
def test_index_shared_transcripts_then_search_then_reindex_unchanged(
    transcripts_dir: Path, episodic_home: Path
) -> None:
    first = run(["index", str(transcripts_dir), "--json"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["found"] >= 160 and report["indexed"] >= 150 and report["failed"] == []
    assert report["skipped"].get("memory-summariser") == 1 and report["skipped"].get("snapshot-only") == 1

    found = run(
        ["search", "CI fails with lint errors but passes locally", "--all-outcomes", "--json"],
        episodic_home,
        EPISODIC_EMBEDDER="hashing",
    )
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert 1 <= len(results) <= 3
    for hit in results:
        assert set(hit["card"]) == CARD_FIELDS
        assert hit["session_id"] and hit["card"]["problem"]

    again = run(["index", str(transcripts_dir), "--json"], episodic_home, EPISODIC_EMBEDDER="hashing")
    second = json.loads(again.stdout)
    assert second["indexed"] == 0 and second["unchanged"] == report["indexed"]

    other = run(["search", "anything at all", "--json"], episodic_home, EPISODIC_EMBEDDER="minilm")
    assert other.returncode == 1
    assert "hashing-v1-384" in other.stderr and "minilm-l6-v2" in other.stderr  # parity names both sides


Quickstart = tuple[Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def quickstarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quickstart]:
    """One `quickstart` into a fresh home, in the environment `episodic_home` gives a test, for this module's
    tests that only read that home (the test that changes it works on a copy)."""
    root = tmp_path_factory.mktemp("quickstart")
    home = root / "episodic-home"
    home.mkdir()
    (root / "user-home").mkdir()
    with pytest.MonkeyPatch.context() as env:
        for name in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "CODEX_HOME", "GEMINI_CLI_HOME"):
            env.delenv(name, raising=False)
        for name in list(os.environ):
            if name.startswith("EPISODIC_") and name != "EPISODIC_TEST_TRANSCRIPTS":
                env.delenv(name, raising=False)
        yield home, run(["quickstart"], home, EPISODIC_EMBEDDER="hashing")


def test_quickstart_indexes_the_demo_corpus_and_prints_results(quickstarted: Quickstart) -> None:
    _, done = quickstarted
    assert done.returncode == 0, done.stderr
    assert "demo corpus" in done.stdout
    assert "found 6 sessions: indexed 6" in done.stdout
    assert "Episode " in done.stdout and "Problem:" in done.stdout


def test_show_and_stats_after_quickstart(quickstarted: Quickstart) -> None:
    episodic_home, done = quickstarted
    assert done.returncode == 0
    stats = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert stats["cards"] == 6 and stats["by_distiller"] == {"heuristic:v8": 6}
    assert stats["by_tenant"] == {"demo": 6}  # apart from the user's memory: no hook token reads it
    missing = run(["show", "no-such-session"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert missing.returncode == 1 and "no episode" in missing.stderr


def test_demo_remove_takes_the_demo_out_and_old_demo_cards_from_the_users_tenant(
    quickstarted: Quickstart, episodic_home: Path
) -> None:
    quickstart_home, done = quickstarted
    assert done.returncode == 0
    for folder in ("episodic-home", "user-home"):  # a copy of the quickstart's home: this test changes it
        shutil.copytree(quickstart_home.parent / folder, episodic_home.parent / folder, dirs_exist_ok=True)
    # an earlier version indexed the demo into the user's own tenant
    assert run(["index", str(DEMO)], episodic_home, EPISODIC_EMBEDDER="hashing").returncode == 0
    before = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert before["by_tenant"] == {"demo": 6, "local": 6}
    done = run(["demo", "remove"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert done.returncode == 0 and "removed 12 demo card(s)" in done.stdout, done.stdout + done.stderr
    after = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert after["cards"] == 0
