"""Small Claude Code sessions for the harvest tests, written into tmp_path (secrets planted on purpose)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

# One planted value per kind; each must be gone from every uploaded body. Built by concatenation so
# no scanner mistakes this test file for a leak.
PEM_BODY = "MIIEowIBAAKCAQEA7bq" + "Zx9vH3kLmNpQrStUvWxYz0123456789abcdefGHIJKLmnopqrstuv"
SECRETS: dict[str, str] = {
    "aws-access-key": "AKIA" + "Z7QXMPLE4RTY9WQD",
    "github-token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "pem-private-key": PEM_BODY,
    "jwt": "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "url-password": "hunter2" + "Sup3rS3cret",
    "bearer-token": "tok_" + "Q9x8W7v6U5t4S3r2Q1p0Zyx",
    "slack-token": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUv",
    "stripe-key": "sk_live_" + "51HqLmNoPqRsTuVwXyZa0123",
    "openai-key": "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90",
    "anthropic-key": "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0PpOoNnMmLl",
}


def _texts() -> tuple[str, str, str]:
    s = SECRETS
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + s["pem-private-key"] + "\n-----END RSA PRIVATE KEY-----"
    user = (
        f"Deploy fails. My AWS key is {s['aws-access-key']} and the repo token {s['github-token']}; "
        f"the Slack bot uses {s['slack-token']}."
    )
    tool_input = (
        f"curl -H 'Authorization: Bearer {s['bearer-token']}' "
        f"https://deploy:{s['url-password']}@db.example.com/status && "
        f"OPENAI_API_KEY={s['openai-key']} ANTHROPIC_API_KEY={s['anthropic-key']} ./run.sh"
    )
    tool_output = f"{pem}\nSTRIPE={s['stripe-key']}\nsession={s['jwt']}\nexit 1"
    return user, tool_input, tool_output


def entry(
    session_id: str, kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/shop",
        "sessionId": session_id,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2026-03-01T10:00:00.000Z",
        **extra,
    }


def session_lines(
    session_id: str, turns: int = 1, *, secrets: bool = True, pad: int = 0
) -> list[dict[str, Any]]:
    """A real-looking session: prompt, Bash call, its (failing) output, a fix and a passing test run."""
    user, tool_input, tool_output = (
        _texts() if secrets else ("The checkout page crashes", "pytest -q", "1 failed")
    )
    lines: list[dict[str, Any]] = []
    parent = None
    for turn in range(turns):
        p = f"{session_id[:8]}-{turn}"
        text = (
            user if turn == 0 else f"Still failing after change {turn}, please look again." + " detail" * pad
        )
        lines += [
            entry(session_id, "user", f"{p}-u", parent, {"role": "user", "content": text}),
            entry(
                session_id,
                "assistant",
                f"{p}-a",
                f"{p}-u",
                {
                    "id": f"msg_{p}",
                    "model": "claude-sonnet-4-6",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{p}",
                            "name": "Bash",
                            "input": {"command": tool_input},
                        }
                    ],
                },
            ),
            entry(
                session_id,
                "user",
                f"{p}-r",
                f"{p}-a",
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{p}",
                            "content": tool_output,
                            "is_error": True,
                        }
                    ],
                },
            ),
            entry(
                session_id,
                "assistant",
                f"{p}-b",
                f"{p}-r",
                {
                    "id": f"msg_{p}b",
                    "model": "claude-sonnet-4-6",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": "The deploy key was rotated; I updated the config and tests pass.",
                        }
                    ],
                },
            ),
        ]
        parent = f"{p}-b"
    return lines


def write_session(
    projects: Path,
    session_id: str,
    *,
    turns: int = 1,
    age_minutes: float = 120,
    secrets: bool = True,
    subagent: bool = False,
    pad: int = 0,
    extra_raw: bytes = b"",
) -> Path:
    """Write `<projects>/-home-dev-shop/<session_id>.jsonl` (and a subagent file) aged `age_minutes`."""
    folder = projects / "-home-dev-shop"
    folder.mkdir(parents=True, exist_ok=True)
    main = folder / f"{session_id}.jsonl"
    body = "".join(json.dumps(e) + "\n" for e in session_lines(session_id, turns, secrets=secrets, pad=pad))
    main.write_bytes(body.encode() + extra_raw)
    paths = [main]
    if subagent:
        sub = folder / session_id / "subagents" / "agent-a7e7e7e.jsonl"
        sub.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            entry(
                session_id,
                "user",
                "sub-u",
                None,
                {"role": "user", "content": "Find the deploy config"},
                agentId="a7e7e7e",
                isSidechain=True,
            ),
            entry(
                session_id,
                "assistant",
                "sub-a",
                "sub-u",
                {
                    "id": "msg_sub",
                    "model": "claude-haiku-4-5",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"Found it; token {SECRETS['github-token']}"}],
                },
                agentId="a7e7e7e",
                isSidechain=True,
            ),
        ]
        sub.write_text("".join(json.dumps(e) + "\n" for e in lines))
        paths.append(sub)
    set_age(paths, age_minutes)
    return main


def set_age(paths: list[Path], age_minutes: float, now: float | None = None) -> None:
    stamp = (now or time.time()) - age_minutes * 60
    for path in paths:
        os.utime(path, (stamp, stamp))
