"""What a newcomer meets in a fresh home: doctor saying a missing hook once, the Codex preview ending on how to
write it, setup wiring the session-end hook with the offline distiller, history search finding a session by most
of the words asked."""

from __future__ import annotations

from pathlib import Path

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
