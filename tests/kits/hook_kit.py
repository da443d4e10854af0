"""The prompt hook as Claude Code runs it (`episodic hook user-prompt-submit` in a subprocess) against a
served index, shared by the tests that check what it injects."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

from kits import warm_cli


def injected_context(
    prompt: str, url: str, token: str, home: Path, session_id: str | None = None, **env: str
) -> str:
    """The hook's additionalContext for `prompt` in `session_id` ('' when it injects nothing); `env` adds
    or overrides. Each call is a new session unless one is named: a session is never given a card twice."""
    session_id = session_id or f"hook-kit-{uuid.uuid4()}"
    full_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "EPISODIC_HOME": str(home),
        "EPISODIC_URL": url,
        "EPISODIC_TOKEN": token,
        "EPISODIC_HOOK_BUDGET_SECONDS": "20",  # what is injected, not how fast (scripts/bench_hook.py)
        "EPISODIC_HOOK_AUTOSTART": "false",
        "EPISODIC_EXPERIMENT_ENABLED": "false",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),  # code under test
        **env,
    }
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "hook", "user-prompt-submit"],
        input=json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": session_id}),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""
