"""The main job through the `episodic` entry point: index, search --json, re-index unchanged, quickstart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import warm_cli
from episodic.models import Card

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


def test_quickstart_indexes_the_demo_corpus_and_prints_results(episodic_home: Path) -> None:
    done = run(["quickstart"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert done.returncode == 0, done.stderr
    assert "demo corpus" in done.stdout
    assert "found 6 sessions: indexed 6" in done.stdout
    assert "Episode " in done.stdout and "Problem:" in done.stdout


def test_show_and_stats_after_quickstart(episodic_home: Path) -> None:
    assert run(["quickstart"], episodic_home, EPISODIC_EMBEDDER="hashing").returncode == 0
    stats = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert stats["cards"] == 6 and stats["by_distiller"] == {"heuristic:v5": 6}
    assert stats["by_tenant"] == {"demo": 6}  # apart from the user's memory: no hook token reads it
    missing = run(["show", "no-such-session"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert missing.returncode == 1 and "no episode" in missing.stderr


def test_demo_remove_takes_the_demo_out_and_old_demo_cards_from_the_users_tenant(episodic_home: Path) -> None:
    assert run(["quickstart"], episodic_home, EPISODIC_EMBEDDER="hashing").returncode == 0
    # an earlier version indexed the demo into the user's own tenant
    assert run(["index", str(DEMO)], episodic_home, EPISODIC_EMBEDDER="hashing").returncode == 0
    before = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert before["by_tenant"] == {"demo": 6, "local": 6}
    done = run(["demo", "remove"], episodic_home, EPISODIC_EMBEDDER="hashing")
    assert done.returncode == 0 and "removed 12 demo card(s)" in done.stdout, done.stdout + done.stderr
    after = json.loads(run(["stats", "--json"], episodic_home, EPISODIC_EMBEDDER="hashing").stdout)
    assert after["cards"] == 0
