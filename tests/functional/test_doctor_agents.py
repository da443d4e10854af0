"""Issue 50 item 5: `doctor` checks the agents that are set up, each with a fix that works for that agent. A
Codex-only user (`setup codex --write`, `codex` not on PATH) gets no Claude Code rows, an untrusted-hook fix
that does not send them back to a setup that cannot trust it, and a port-conflict fix that names `setup codex`;
a Gemini-only user gets Gemini's rows."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, bare_env, free_port


class _Other(BaseHTTPRequestHandler):
    """Another program on the episodic port (not this home's server)."""

    def do_POST(self) -> None:
        self.send_response(501)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _user(tmp: Path, setup: str) -> tuple[dict[str, str], int]:
    home, user_home = tmp / "episodic-home", tmp / "user-home"
    home.mkdir()
    user_home.mkdir()
    port = free_port()
    # no background server: what doctor says of the port is the test
    (home / "config.toml").write_text(f'embedder = "hashing"\nport = {port}\nhook_autostart = false\n')
    env = bare_env(home, user_home)
    for args in (["index", str(DEMO)], ["setup", setup, "--write"]):
        done = warm_cli.run([str(EPISODIC), *args], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return env, port


def _doctor(env: dict[str, str]) -> list[str]:
    done = warm_cli.run([str(EPISODIC), "doctor"], env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def _row(lines: list[str], name: str) -> tuple[str, str]:
    """(the row, its fix line) of the check called `name`."""
    for i, line in enumerate(lines):
        if line.split("] ", 1)[-1].startswith(f"{name}:"):
            fix = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("fix:") else ""
            return line, fix
    raise AssertionError(f"no {name!r} row in:\n" + "\n".join(lines))


def test_a_codex_only_user_gets_codex_rows_and_fixes_that_work_for_codex(tmp_path: Path) -> None:
    env, port = _user(tmp_path, "codex")  # `codex` is not on PATH here
    server = ThreadingHTTPServer(("127.0.0.1", port), _Other)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        lines = _doctor(env)
    finally:
        server.shutdown()
        server.server_close()
    text = "\n".join(lines)
    # no Claude Code row at all: its MCP entry, hooks and prompt-hook run are not this user's
    for claude_row in ("MCP entry:", "hook entry:", "failure hook:", "prompt hook:"):
        assert f"] {claude_row}" not in text, text
    assert "claude-code" not in text and ".claude" not in text, text
    assert _row(lines, "MCP entry (codex)")[0].startswith("[ok")
    for moment in ("prompt hook (codex)", "failure hook (codex)", "session-end hook (codex)"):
        row, fix = _row(lines, moment)
        assert row.startswith("[warn") and "not trusted, so Codex skips it" in row, row
        # setup trusts through `codex app-server`: with no codex on PATH, that fix cannot work
        assert "`codex` is not on PATH here" in fix and "type /hooks" in fix, fix
    row, fix = _row(lines, "server reachable")
    assert row.startswith("[fail") and "another program answers" in row, row
    assert "`episodic setup codex --write` does it now" in fix, fix
    assert _row(lines, "prompt hook runs (codex)")[0].startswith("[fail")


def test_a_gemini_only_user_gets_gemini_rows(tmp_path: Path) -> None:
    env, _ = _user(tmp_path, "gemini")
    lines = _doctor(env)
    text = "\n".join(lines)
    assert "] hook entry:" not in text and "] MCP entry:" not in text and "claude-code" not in text, text
    assert _row(lines, "MCP entry (gemini)")[0].startswith("[ok")
    for moment in ("prompt hook (gemini)", "failure hook (gemini)", "session-end hook (gemini)"):
        assert _row(lines, moment)[0].startswith("[ok"), moment
    assert _row(lines, "prompt hook runs (gemini)")[0].startswith("[fail")  # no server: autostart is off here
