"""Small Claude Code sessions for the viewer tests: a symptom, an edit, and a check after it (verified)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.harvest_sessions import entry

PROJECT_DIR = "-home-dev-shop"


def _entry(
    session_id: str, kind: str, uuid: str, parent: str | None, message: dict[str, Any], at: str
) -> dict[str, Any]:
    return entry(session_id, kind, uuid, parent, message, timestamp=at)  # the harvest fakes' envelope


def _assistant(
    session_id: str, uuid: str, parent: str, content: list[dict[str, Any]], at: str
) -> dict[str, Any]:
    message = {"id": f"msg_{uuid}", "model": "claude-sonnet-4-6", "role": "assistant", "content": content}
    return _entry(session_id, "assistant", uuid, parent, message, at)


def _result(
    session_id: str, uuid: str, parent: str, tool_id: str, output: str, at: str, error: bool = False
) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": error}]
    return _entry(session_id, "user", uuid, parent, {"role": "user", "content": content}, at)


def turn_lines(
    session_id: str, n: int, prompt: str, closing: str, day: str, parent: str | None
) -> list[dict[str, Any]]:
    """One fix: the prompt, a failing test run, an edit, a passing test run, a closing summary."""
    p = f"{session_id[:6]}-{n}"
    at = f"{day}T10:0{n}:00.000Z"
    return [
        _entry(session_id, "user", f"{p}-u", parent, {"role": "user", "content": prompt}, at),
        _assistant(
            session_id,
            f"{p}-a1",
            f"{p}-u",
            [{"type": "tool_use", "id": f"t{p}1", "name": "Bash", "input": {"command": "pytest -q"}}],
            at,
        ),
        _result(session_id, f"{p}-r1", f"{p}-a1", f"t{p}1", "F.. 1 failed, 2 passed", at, error=True),
        _assistant(
            session_id,
            f"{p}-a2",
            f"{p}-r1",
            [
                {
                    "type": "tool_use",
                    "id": f"t{p}2",
                    "name": "Edit",
                    "input": {
                        "file_path": "/home/dev/shop/app/settings.py",
                        "old_string": "a",
                        "new_string": "b",
                    },
                }
            ],
            at,
        ),
        _result(session_id, f"{p}-r2", f"{p}-a2", f"t{p}2", "The file was updated.", at),
        _assistant(
            session_id,
            f"{p}-a3",
            f"{p}-r2",
            [{"type": "tool_use", "id": f"t{p}3", "name": "Bash", "input": {"command": "pytest -q"}}],
            at,
        ),
        _result(session_id, f"{p}-r3", f"{p}-a3", f"t{p}3", "... 3 passed in 0.4s", at),
        _assistant(session_id, f"{p}-a4", f"{p}-r3", [{"type": "text", "text": closing}], at),
    ]


def write_session(
    projects: Path, session_id: str, prompt: str, closing: str, day: str, turns: int = 1
) -> Path:
    folder = projects / PROJECT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = []
    for n in range(turns):
        text = (
            prompt if n == 0 else f"{prompt} It happens again on the admin page too, please look once more."
        )
        lines += turn_lines(session_id, n, text, closing, day, lines[-1]["uuid"] if lines else None)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# (session id, prompt, closing summary, day)
SESSIONS: list[tuple[str, str, str, str]] = [
    (
        "11111111-aaaa-4aaa-8aaa-000000000001",
        "The checkout page shows a blank total when the cart holds a discounted item; the price rounding seems broken.",
        "The discount was applied after rounding, so totals under one unit became zero; rounding now happens last and the tests pass.",
        "2026-03-02",
    ),
    (
        "22222222-bbbb-4bbb-8bbb-000000000002",
        "Login with a valid password redirects back to the login form; the session cookie is never kept by the browser.",
        "The cookie was marked secure while the dev server speaks plain http; the flag now follows the scheme and the tests pass.",
        "2026-03-09",
    ),
    (
        "33333333-cccc-4ccc-8ccc-000000000003",
        "Nightly export job times out after the database upgrade; the export query became very slow on large tables.",
        "The upgrade dropped an index the export query needed; recreating it brought the job back under a minute and the tests pass.",
        "2026-03-16",
    ),
]
