"""Helpers for the hostile-input suite (issue 14): every test drives a real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kits import warm_cli


def session_lines(session_id: str, prompt: str, answer: str = "done, the tests pass now") -> str:
    """A small valid Claude Code transcript (user prompt, a passing test run, an answer)."""
    entries: list[dict[str, Any]] = [
        {
            "type": "user",
            "sessionId": session_id,
            "uuid": f"{session_id}-u1",
            "cwd": "/home/dev/shop",
            "timestamp": "2026-01-10T10:00:00Z",
            "message": {"role": "user", "content": prompt},
        },
        {
            "type": "assistant",
            "sessionId": session_id,
            "uuid": f"{session_id}-a1",
            "timestamp": "2026-01-10T10:01:00Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I will fix the import order and run the tests."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "pytest -q"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "sessionId": session_id,
            "uuid": f"{session_id}-u2",
            "timestamp": "2026-01-10T10:02:00Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "12 passed in 0.5s"}],
            },
        },
        {
            "type": "assistant",
            "sessionId": session_id,
            "uuid": f"{session_id}-a2",
            "timestamp": "2026-01-10T10:03:00Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        },
    ]
    return "".join(json.dumps(e) + "\n" for e in entries)


def claude_messages(session_id: str, messages: list[tuple[str, Any]]) -> str:
    """A Claude Code transcript of these (role, content) messages in order, one second apart."""
    entries = [
        {
            "type": role,
            "uuid": f"u-{n}",
            "parentUuid": f"u-{n - 1}" if n else None,
            "sessionId": session_id,
            "timestamp": f"2026-01-02T03:{n // 60:02d}:{n % 60:02d}Z",
            "cwd": "/home/dev/app",
            "message": {"role": role, "content": content},
        }
        for n, (role, content) in enumerate(messages)
    ]
    return "".join(json.dumps(e) + "\n" for e in entries)


def cli(home: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m episodic ...` with an isolated home and the hashing embedder (no model download)."""
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_") and k != "CLAUDE_CONFIG_DIR"},
        "EPISODIC_HOME": str(home),
        "HOME": str(home.parent / "user-home"),
        "EPISODIC_EMBEDDER": "hashing",
        **env,
    }
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture()
def hostile_dir(tmp_path: Path) -> Path:
    """`$D` of the issue, holding one valid session beside whatever the test adds."""
    folder = tmp_path / "D"
    folder.mkdir()
    (folder / "11111111-1111-4111-8111-111111111111.jsonl").write_text(
        session_lines(
            "11111111-1111-4111-8111-111111111111",
            "pytest fails with an import error after I renamed the package folder, please fix it",
        )
    )
    return folder
