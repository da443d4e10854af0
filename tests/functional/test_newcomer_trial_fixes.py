"""What a newcomer meets in a fresh home: doctor saying a missing hook once, the Codex preview ending on how to
write it, setup wiring the session-end hook with the offline distiller, history search finding a session by most
of the words asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from client_env import DEMO, episodic


def _config(home: Path) -> None:
    (home / "config.toml").write_text('embedder = "hashing"\n')


def test_doctor_before_setup_says_the_missing_hook_once(episodic_home: Path) -> None:
    _config(episodic_home)
    assert episodic("index", str(DEMO)).returncode == 0  # an index, so doctor reaches the hook-run check
    done = episodic("doctor")
    lines = done.stdout.splitlines()
    entry = next(line for line in lines if line.startswith("[fail] hook entry:"))
    assert "no episodic UserPromptSubmit hook" in entry, done.stdout
    run = next(line for line in lines if "] prompt hook:" in line)
    assert run.startswith("[warn] prompt hook: not tried"), done.stdout
    assert "no episodic UserPromptSubmit hook" not in run, done.stdout


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_an_agent_preview_ends_on_how_to_write_it_after_its_hooks(episodic_home: Path, agent: str) -> None:
    _config(episodic_home)
    done = episodic("setup", agent)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    again = [i for i, line in enumerate(lines) if line.startswith("# Run again with --write")]
    hooks = [
        i for i, line in enumerate(lines) if line.startswith(("# The prompt hook", "# The session-end hook"))
    ]
    assert len(again) == 1 and hooks and again[0] > max(hooks), done.stdout
    assert all(line.startswith("# distiller") or line.startswith("#  ") for line in lines[again[0] + 1 :]), (
        done.stdout
    )


def _claude_hooks(episodic_home: Path) -> dict:
    return json.loads((episodic_home.parent / "user-home" / ".claude" / "settings.json").read_text())["hooks"]


def test_setup_claude_code_with_the_offline_distiller_distils_an_ended_session(episodic_home: Path) -> None:
    _config(episodic_home)
    done = episodic("setup", "claude-code", "--distiller", "heuristic", "--write")
    assert done.returncode == 0, done.stderr
    ended = json.dumps(_claude_hooks(episodic_home)["SessionEnd"])
    assert ended.count("hook session-distill") == 1, ended
    with (episodic_home / "config.toml").open("a") as config:  # switched off: the next setup takes it out
        config.write("hook_session_end = false\n")
    again = episodic("setup", "claude-code", "--write")
    assert again.returncode == 0, again.stderr
    assert "SessionEnd" not in _claude_hooks(episodic_home)
