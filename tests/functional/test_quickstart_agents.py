"""Issue 50 item 2 / issue 51: `quickstart` on a HOME holding only Codex rollouts (or only Gemini CLI sessions)
indexes and searches them, never the demo; and a later `quickstart` after `index` does not add the demo back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kits import warm_cli

pytestmark = pytest.mark.transcripts

GEMINI_SESSIONS = (  # real Gemini CLI sessions of the entireio/cli team (../shared/transcripts/SOURCES.md)
    "f7633853-6663-4dbb-bbf4-6159afa29df8.jsonl",
    "fa4593e0-f7e1-4dd1-b656-da95fb4d60fa.jsonl",
    "faff42ab-6ea5-4f78-b8c4-f7dd6272af08.jsonl",
)


def episodic(*args: str) -> subprocess.CompletedProcess[str]:
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "EPISODIC_EMBEDDER": "hashing", "EPISODIC_DISTILLER": "heuristic"},
    )


def _user_home() -> Path:
    return Path(os.environ["HOME"])


def _quickstart_finds(agent: str, query: str, indexed: int) -> None:
    quick = episodic("quickstart", "--query", query)
    assert quick.returncode == 0, quick.stderr
    assert "Traceback" not in quick.stderr
    assert "demo" not in quick.stdout, quick.stdout
    assert "Indexing your sessions:" in quick.stdout and agent in quick.stdout
    assert f"indexed {indexed}" in quick.stdout
    assert "No confident match." not in quick.stdout, quick.stdout  # only an empty answer says so
    assert "[1] (" in quick.stdout, quick.stdout  # the search found one of them
    stats = json.loads(episodic("stats", "--json").stdout)
    assert stats["by_tenant"] == {"local": indexed}  # no demo tenant


def test_quickstart_indexes_and_searches_codex_rollouts(transcripts_dir: Path, episodic_home: Path) -> None:
    day = _user_home() / ".codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    for rollout in (transcripts_dir / "codex" / "madshn__localpush").glob("rollout-*.jsonl"):
        shutil.copy(rollout, day / rollout.name)
    _quickstart_finds("Codex CLI", "run the tests and fix the failing one", 2)
    # `index` and a second quickstart: the demo never comes back beside the Codex cards
    assert episodic("index").returncode == 0
    again = episodic("quickstart")
    assert again.returncode == 0 and "demo" not in again.stdout, again.stdout
    assert json.loads(episodic("stats", "--json").stdout)["by_tenant"] == {"local": 2}


def test_quickstart_indexes_and_searches_gemini_sessions(transcripts_dir: Path, episodic_home: Path) -> None:
    chats = _user_home() / ".gemini" / "tmp" / "cli" / "chats"
    chats.mkdir(parents=True)
    for name in GEMINI_SESSIONS:
        shutil.copy(transcripts_dir / "entireio__cli" / name, chats / f"session-{name}")
    _quickstart_finds("Gemini CLI", "run an agent that creates a color file inside docs", 3)
