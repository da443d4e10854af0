"""Synthetic Claude Code sessions for the experiment tests: a failing test run, fixes, and an ending that is
verified (a passing run after the last edit) or not; token usage and timestamps recorded like the real CLI."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


class _Writer:
    def __init__(self, session_id: str, cwd: str, tokens_per_reply: int, seconds_per_step: float) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.tokens = tokens_per_reply
        self.step = seconds_per_step
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.n = 0

    def _add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        uuid = f"{self.session_id[:8]}-{self.n}"
        stamp = START + timedelta(seconds=self.step * self.n)
        self.lines.append(
            {
                "parentUuid": self.parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": self.cwd,
                "sessionId": self.session_id,
                "version": "2.1.39",
                "gitBranch": "main",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": stamp.isoformat().replace("+00:00", "Z"),
                **extra,
            }
        )
        self.parent = uuid
        self.n += 1

    def prompt(self, text: str) -> None:
        self._add("user", {"role": "user", "content": text})

    def tool(self, name: str, tool_input: dict[str, Any], output: str, is_error: bool = False) -> None:
        tool_id = f"toolu_{self.session_id[:8]}_{self.n}"
        usage = {"input_tokens": self.tokens, "output_tokens": self.tokens // 10}
        self._add(
            "assistant",
            {
                "id": f"msg_{self.session_id[:8]}_{self.n}",
                "model": "claude-sonnet-4-6",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
                "usage": usage,
            },
            requestId=f"req_{self.n}",
        )
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": is_error}
        self._add("user", {"role": "user", "content": [result]})

    def test_run(self, passed: bool) -> None:
        if passed:
            self.tool("Bash", {"command": "pytest -q"}, "12 passed in 0.41s")
        else:
            self.tool(
                "Bash",
                {"command": "pytest -q"},
                "Exit code 1\nFAILED tests/test_cart.py::test_total\n1 failed",
                True,
            )

    def edit(self, old: str, new: str) -> None:
        path = f"{self.cwd}/src/cart.py"
        self.tool("Edit", {"file_path": path, "old_string": old, "new_string": new}, "ok")


def session_lines(
    session_id: str,
    *,
    failing_runs: int,
    verified: bool,
    cwd: str = "/home/dev/shop",
    tokens_per_reply: int = 1000,
    seconds_per_step: float = 20.0,
    revert: bool = False,
    prompt: str = "The cart total is wrong when a coupon and a discount both apply; the test fails.",
) -> list[dict[str, Any]]:
    """A session that fails `failing_runs` test runs (an edit after each), then ends passing or failing."""
    w = _Writer(session_id, cwd, tokens_per_reply, seconds_per_step)
    w.prompt(prompt)
    for attempt in range(failing_runs):
        w.test_run(passed=False)
        w.edit(
            f"total = price - coupon  # v{attempt}", f"total = price - coupon - discount  # v{attempt + 1}"
        )
        if revert and attempt == 0:
            w.edit(
                f"total = price - coupon - discount  # v{attempt + 1}",
                f"total = price - coupon  # v{attempt}",
            )
    w.test_run(passed=verified)
    return w.lines


def write_session(folder: Path, session_id: str, age_minutes: float = 120, **kwargs: Any) -> Path:
    """`<folder>/<session_id>.jsonl`, last modified `age_minutes` ago (past harvest's quiet period)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in session_lines(session_id, **kwargs)))
    stamp = time.time() - age_minutes * 60
    os.utime(path, (stamp, stamp))
    return path
