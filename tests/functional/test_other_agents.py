"""Codex CLI and Gemini CLI sessions from ../shared/transcripts become trajectories and cards; a mixed
folder indexes in one run with per-agent counts, and `search --agent` keeps to one agent's episodes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from episodic.distill.heuristic import HeuristicDistiller
from episodic.kernel.models import NotEpisode, Trajectory
from episodic.kernel.settings import load_settings
from episodic.parse.agents import AllAgentsSource
from episodic.scrub import default_scrubber
from kits import warm_cli

pytestmark = pytest.mark.transcripts

GEMINI_SESSIONS = (
    "29eb990e-c773-4302-a4e7-317f0af0001f.jsonl",
    "f7633853-6663-4dbb-bbf4-6159afa29df8.jsonl",
    "fa4593e0-f7e1-4dd1-b656-da95fb4d60fa.jsonl",
    "faff42ab-6ea5-4f78-b8c4-f7dd6272af08.jsonl",
)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"


def source() -> AllAgentsSource:
    return AllAgentsSource.from_settings(load_settings(), default_scrubber())


def test_real_codex_and_gemini_samples_become_trajectories_and_cards(
    transcripts_dir: Path, episodic_home: Path
) -> None:
    src = source()
    paths = [
        str(transcripts_dir / "codex"),
        *(str(transcripts_dir / "entireio__cli" / n) for n in GEMINI_SESSIONS),
    ]
    found = list(src.discover(paths))
    assert Counter(s.agent for s in found) == {"codex": 2, "gemini": 4}
    loaded = {Path(s.main_path).name: src.load(s) for s in found}
    empty = loaded.pop("29eb990e-c773-4302-a4e7-317f0af0001f.jsonl")
    assert isinstance(empty, NotEpisode) and empty.reason == "empty"  # one CLI warning, nothing said
    distiller = HeuristicDistiller()
    for name, traj in loaded.items():
        assert isinstance(traj, Trajectory), name
        assert traj.request and traj.tool_calls and traj.closing_summary and traj.started_at, name
        card = distiller.distill(traj, "").card
        # the Codex samples' arguments and texts are redacted upstream: their cards have no steps to tell
        assert card.problem and (card.steps or traj.agent == "codex"), name
    codex = [t for t in loaded.values() if isinstance(t, Trajectory) and t.agent == "codex"]
    assert sorted(len(t.tool_calls) for t in codex) == [5, 118]
    assert {t.agent_version for t in codex} == {"0.104.0-alpha.1"} and {t.git_branch for t in codex} == {
        "main"
    }
    gemini = [t for t in loaded.values() if isinstance(t, Trajectory) and t.agent == "gemini"]
    assert len(gemini) == 3 and {t.project for t in gemini} == {"cli"}  # the entireio/cli checkout
    assert all(t.files_edited for t in gemini)


def run(args: list[str], home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    env |= {"EPISODIC_EMBEDDER": "hashing", **extra}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        env.pop(name, None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=600
    )


def test_a_mixed_folder_indexes_in_one_run_and_search_filters_by_agent(
    transcripts_dir: Path, episodic_home: Path, tmp_path: Path
) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(transcripts_dir / "codex", mixed / "codex")
    (mixed / "gemini").mkdir()
    for name in GEMINI_SESSIONS:
        shutil.copy(transcripts_dir / "entireio__cli" / name, mixed / "gemini" / name)
    (mixed / "claude").mkdir()
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(transcripts_dir / "marot__spotter" / name, mixed / "claude" / name)

    done = run(["index", str(mixed), "--json"], episodic_home)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["agents"] == {"claude-code": 2, "codex": 2, "gemini": 4}
    assert report["indexed"] == 7 and report["skipped"] == {"empty": 1} and report["failed"] == []

    text = run(["index", str(mixed)], episodic_home)
    assert "by agent: claude-code 2, codex 2, gemini 4" in text.stdout and "unchanged 7" in text.stdout

    for agent, expected in (("codex", 2), ("gemini", 3), ("claude-code", 2)):
        found = run(
            [
                "search",
                "write a file and run the tests",
                "--agent",
                agent,
                "--all-outcomes",
                "--k",
                "5",
                "--json",
            ],
            episodic_home,
            EPISODIC_MIN_SIMILARITY="-1",  # the hashing embedder's cosines say little: the filter is the test
        )
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)["results"]
        # every card of that agent may come back; none of another agent ever comes in
        assert 1 <= len(hits) <= expected and {h["agent"] for h in hits} == {agent}, agent
    every = run(
        ["search", "write a file and run the tests", "--all-outcomes", "--k", "5", "--json"], episodic_home
    )
    assert {h["agent"] for h in json.loads(every.stdout)["results"]} >= {"codex", "gemini"}


def test_default_roots_of_each_agent_are_discovered(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_home = episodic_home.parent / "user-home"
    shutil.copytree(FIXTURES / "gemini-0.61-home" / ".gemini", user_home / ".gemini")
    codex_home = episodic_home.parent / "codex-home"
    day = codex_home / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "codex-0.171-offline-rollout.jsonl",
        day / "rollout-2026-12-01T13-36-38-01a231d2-5845-7171-b1d1-c83bdd7304e5.jsonl",
    )
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    found = list(source().discover(None))
    assert Counter(s.agent for s in found) == {"codex": 1, "gemini": 1}
