"""Issue 52, through the face where it showed: `inspect --render` (what a distiller is sent), run as a CLI subprocess
over a Claude Code session, shows neither a password named in the assistant's thinking ("the admin password is X",
"password X" with no `=`) nor the parts of an AWS key id split across two messages."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from kits.secret_kit import ALNUM, body

from .conftest import claude_messages, cli

SESSION = "5252aaaa-0000-4000-8000-000000000052"
PROSE_PW, BARE_PW = body(ALNUM, 12), body(ALNUM, 14)
KEY_ID = "AKIA" + body(string.ascii_uppercase + "234567", 16)
# ordinary sentences about passwords stay as they are
KEPT = "The password reset flow hashes with argon2id; password fields stay masked."


def _session(path: Path) -> None:
    thinking = f"The admin password is {PROSE_PW} per the runbook. I'll try password {BARE_PW} first. {KEPT}"
    messages: list[tuple[str, Any]] = [
        ("user", "log in to the admin console and fix the failing deploy check"),
        ("assistant", [{"type": "thinking", "thinking": thinking, "signature": "c2lnbmF0dXJl"}]),
        ("assistant", [{"type": "text", "text": f"The deploy key id in the log is {KEY_ID[:7]}"}]),
        ("assistant", [{"type": "text", "text": f"{KEY_ID[7:]} and the check fails on it."}]),
    ]
    path.write_text(claude_messages(SESSION, messages))


def test_render_shows_no_password_in_prose_nor_a_split_key_id(tmp_path: Path) -> None:
    folder = tmp_path / "claude" / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    _session(folder / f"{SESSION}.jsonl")
    rendered = cli(tmp_path / "home", "inspect", "--render", str(folder / f"{SESSION}.jsonl"))
    assert rendered.returncode == 0, rendered.stderr
    out = rendered.stdout
    assert "The admin password is [REDACTED:password]" in out, out
    assert "password [REDACTED:password] first" in out, out
    assert KEPT in out
    leaked = [part for part in (PROSE_PW, BARE_PW, KEY_ID[4:7], KEY_ID[7:]) if part in out]
    assert leaked == [], out
