"""`episodic cards check`: the readability of a card folder, or of the offline cards of some transcripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kits import warm_cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "injected"


def run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    env.pop("CLAUDE_CONFIG_DIR", None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", "cards", "check", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_offline_cards_of_orchestrated_sessions_read_whole(tmp_path: Path) -> None:
    done = run(["--distil", str(FIXTURE), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cards"] == 4 and report["problems_with_prompt"] == 4
    assert report["holes"] == 0 and report["cuts"] == 0 and report["injected"] == 0


def test_a_folder_s_cut_and_echoing_cards_are_counted_and_shown(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    card = {
        "problem": "The login form accepts an empty password and signs the user in.",
        "steps": ["Ran pytest: failed (AssertionError: expected {'error': 'empty'…)"],
        "insight": "The validator checked for the field's presence, not its length.",
        "key_decisions": [],
        "dead_ends": [],
        "misleading_intuitions": [],
        "critical_checks": [],
        "tags": [],
        "outcome": "unverified",
    }
    (folder / "1a1a1a1a-0000-4000-8000-000000000001.json").write_text(json.dumps(card))
    done = run(["--cards", str(folder), str(FIXTURE / "claude-code")], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "cut 33.3% (1)" in first and "echoing the first prompt 100.0% (1 of 1)" in first, done.stdout
    assert "steps[0]: Ran pytest: failed" in done.stdout
    (folder / "1b1b1b1b-0000-4000-8000-000000000002.json").write_text('{"problem": "no other field"}')
    done = run(["--cards", str(folder), str(FIXTURE / "claude-code")], tmp_path / "home")
    assert "not read" in done.stdout and "1b1b1b1b" in done.stdout and "required property" in done.stdout


def test_cards_and_distil_together_is_a_usage_error(tmp_path: Path) -> None:
    done = run(["--cards", str(FIXTURE), "--distil"], tmp_path / "home")
    assert done.returncode == 2 and "not both" in done.stderr
