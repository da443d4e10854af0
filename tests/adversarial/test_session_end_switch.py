"""`hook_session_end = false` holds at run time: the session-end hook, fed each agent's own payload (Claude Code's
and Gemini CLI's `SessionEnd`, Codex's `Stop`), returns at once with one log line, starts no worker and
stores no card; a worker already started (a Codex turn waiting to go quiet) stores nothing either."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kits.proc_kit import pids_with_args

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE = FIXTURES / "agents" / "claude-2.1.332-not-logged-in.jsonl"
CODEX = FIXTURES / "agents" / "codex-0.171-answered-rollout.jsonl"
GEMINI = next(
    (FIXTURES / "agents" / "gemini-0.61-home" / ".gemini" / "tmp" / "proj" / "chats").glob("*.jsonl")
)
SKIP_LINE = "hook: skip: switched off (hook_session_end = false)"

# each agent's hook input as it sends it (the fields these CLIs write; the hook reads transcript_path and the event)
AGENTS = {
    "claude-code": (CLAUDE, {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
    "codex": (
        CODEX,
        {"hook_event_name": "Stop", "turn_id": "1", "stop_hook_active": False, "model": "gpt-5"},
    ),
    "gemini": (
        GEMINI,
        {"hook_event_name": "SessionEnd", "reason": "exit", "timestamp": "2026-12-01T13:40:00Z"},
    ),
}


def _env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith("EPISODIC_") and key != "HOME"
    }
    env.update(
        {
            "EPISODIC_HOME": str(home),
            "HOME": str(tmp_path / "user-home"),
            "EPISODIC_EMBEDDER": "hashing",
            "EPISODIC_DISTILLER": "claude-code",  # an agent distiller: the model calls the switch turns off
            **extra,
        }
    )
    return env


def _switch_off(home: Path, how: str) -> dict[str, str]:
    """The switch as the user sets it: in the config file, or as EPISODIC_HOOK_SESSION_END."""
    if how == "env":
        return {"EPISODIC_HOOK_SESSION_END": "false"}
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("hook_session_end = false\n", encoding="utf-8")
    return {}


def _log_lines(home: Path) -> list[str]:
    log = home / "logs" / "session-distill.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@pytest.mark.parametrize("how", ["config", "env"])
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_switched_off_session_end_hook_starts_nothing(tmp_path: Path, agent: str, how: str) -> None:
    source, fields = AGENTS[agent]
    transcript = tmp_path / "sessions" / source.name
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(source, transcript)
    home = tmp_path / "episodic-home"
    env = _env(home, tmp_path, **_switch_off(home, how))
    payload = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(tmp_path), **fields}
    done = subprocess.run(
        [sys.executable, "-m", "episodic", "hook", "session-distill"],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (
        pids_with_args("distill-session", str(transcript)) == []
    )  # no worker (Popen returns once it is exec'd)
    lines = _log_lines(home)
    assert len(lines) == 1 and lines[0].endswith(SKIP_LINE), lines
    assert not (home / "index.sqlite3").exists()  # nothing stored


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_worker_started_before_the_switch_stores_nothing(tmp_path: Path, agent: str) -> None:
    """A Codex worker waits for the session to go quiet; the user switches off meanwhile: no card."""
    source, _ = AGENTS[agent]
    home = tmp_path / "episodic-home"
    env = _env(home, tmp_path, EPISODIC_HOOK_SESSION_END="false", EPISODIC_DISTILL_QUIET_SECONDS="0")
    done = subprocess.run(
        [sys.executable, "-m", "episodic", "distill-session", "--after-quiet", str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = _log_lines(home)
    assert len(lines) == 1 and "worker: switched off (hook_session_end = false)" in lines[0], lines
    assert not (home / "index.sqlite3").exists()
