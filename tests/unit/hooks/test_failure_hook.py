"""The PostToolUseFailure hook as Claude Code runs it (a subprocess, the payload the real CLI 2.1.x sends for a
failed Bash command): one entry for an error another session of the token's tenant got past, nothing
otherwise; every other path exits 0, prints nothing and logs one line. And `setup` registers it (matcher
Bash), `hook_failure = false` removes it, the user's own hooks stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodic.cli.setup_clients import claude_code_plan, merge_hooks
from episodic.failures.service import FailureMemory, remember_fixes
from episodic.failures.sqlite_store import SQLiteFailureStore
from episodic.kernel.auth import LocalTokenStore
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.plumbing.marker import INJECTED_OPEN
from episodic.scrub import default_scrubber
from kits import warm_cli
from kits.mcp_testkit import ALPHA, BETA, build_memory, settings_for
from unit.failures.test_failure_memory import GO_ERROR, _session

ERROR = GO_ERROR.format(path="/elsewhere/internal/paths/paths.go", line=149)


def payload(command: str = "go test ./...", error: str = ERROR, tool: str = "Bash", **extra: object) -> str:
    """What the real CLI sends (checked with .tools/claude 2.1.x: tests/functional/test_failure_hook_cli.py)."""
    return json.dumps(
        {
            "session_id": "now-1",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/tmp",
            "permission_mode": "default",
            "hook_event_name": "PostToolUseFailure",
            "tool_name": tool,
            "tool_input": {"command": command},
            "tool_use_id": "toolu_1",
            "error": error,
            "is_interrupt": False,
            "duration_ms": 155,
            **extra,
        }
    )


def run_hook(home: Path, stdin: str, url: str = "", token: str = "epi_x", **env: str) -> tuple[int, str, str]:
    full = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "EPISODIC_HOME": str(home),
        "EPISODIC_HOOK_AUTOSTART": "false",
        "EPISODIC_HOOK_BUDGET_SECONDS": "20",  # which path, not how fast (scripts/bench_failures.py)
        "EPISODIC_TOKEN": token,
        **({"EPISODIC_URL": url} if url else {}),
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        **env,
    }
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "hook", "post-tool-failure"],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )
    log = home / "logs" / "hook.log"
    last = log.read_text().splitlines()[-1] if log.exists() else ""
    assert done.stderr == ""
    return done.returncode, done.stdout, last


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("failure-hook")
    settings = settings_for(tmp / "server")
    memory = build_memory(settings)
    failures = FailureMemory(settings, SQLiteFailureStore(tmp / "failures.sqlite3"), default_scrubber())
    memory.parts["failures"] = failures
    remember_fixes(failures, ALPHA, _session(tmp, "s-fixed", "2026-02-15"))
    tokens = LocalTokenStore(settings.tokens_path)
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        yield server.url, tokens.add(ALPHA), tokens.add(BETA), tmp


def test_a_failure_another_session_got_past_gets_one_entry(served) -> None:  # type: ignore[no-untyped-def]
    url, alpha, _, tmp = served
    code, out, log = run_hook(tmp / "client", payload(), url, alpha)
    assert code == 0
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUseFailure"
    assert output["additionalContext"].startswith(INJECTED_OPEN)
    # no card of that session in this index: the entry says so instead of pointing get_episode at nothing
    assert "Session s-fixed of 2026-02-15 (no card of it is stored yet)" in output["additionalContext"]
    assert len(output["additionalContext"]) < 1000
    assert "post-tool-failure ok: injected the fix of an earlier session" in log


@pytest.mark.parametrize(
    ("stdin", "who", "env", "logged"),
    [
        (
            payload(error="x.go:1:1: undefined: neverSeenHelper"),
            "alpha",
            {},
            "ok: no strong match (never got past",
        ),
        (payload(), "beta", {}, "ok: no strong match (never got past"),  # another tenant's memory
        (payload(session_id="s-fixed"), "alpha", {}, "ok: no strong match"),  # its own session
        (payload(tool="Read"), "alpha", {}, "skip: not a shell command"),
        (payload(is_interrupt=True), "alpha", {}, "skip: interrupted"),
        (payload(), "alpha", {"EPISODIC_HOOK_FAILURE": "false"}, "skip: switched off"),
        (payload(), "alpha", {"EPISODIC_DISTILLING": "1"}, "skip: inside a background distil"),
        ("{not json", "alpha", {}, "skip: bad stdin"),
        (json.dumps({"tool_name": "Bash", "tool_input": {}}), "alpha", {}, "skip: bad stdin"),
    ],
)
def test_everything_else_exits_0_silently_with_one_log_line(served, stdin, who, env, logged) -> None:  # type: ignore[no-untyped-def]
    url, alpha, beta, tmp = served
    code, out, log = run_hook(tmp / "client", stdin, url, alpha if who == "alpha" else beta, **env)
    assert (code, out) == (0, "")
    assert f"post-tool-failure {logged}" in log


def test_no_server_exits_0_silently(tmp_path: Path) -> None:
    code, out, log = run_hook(tmp_path / "home", payload(), "http://127.0.0.1:9/mcp")
    assert (code, out) == (0, "") and "post-tool-failure fail: server unreachable" in log


def test_the_hook_imports_only_the_stdlib_before_the_network_call() -> None:
    code = (
        "import sys; import episodic.hooks.failure; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pydantic', 'click', 'numpy', 'httpx2')"
        " or (m.startswith('episodic.') and m not in ('episodic.hooks', 'episodic.plumbing', 'episodic.hooks.failure', 'episodic.hooks.prompt', "
        "'episodic.hooks.payload', 'episodic.hooks.server_client', 'episodic.hooks.packing', 'episodic.plumbing.envsource', 'episodic.plumbing.marker', 'episodic.plumbing.bounded', 'episodic.plumbing.hook_choice', 'episodic.hooks.failure_payloads'))]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_setup_registers_the_hook_for_bash_and_the_switch_removes_it(tmp_path: Path) -> None:
    settings_file = tmp_path / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    theirs = {"matcher": "Edit", "hooks": [{"type": "command", "command": "my-own-hook"}]}
    settings_file.write_text(json.dumps({"hooks": {"PostToolUseFailure": [theirs]}}))
    plan = claude_code_plan(tmp_path, executable="/venv/bin/episodic")
    assert merge_hooks(plan) is not None
    groups = json.loads(settings_file.read_text())["hooks"]["PostToolUseFailure"]
    assert groups[0] == theirs
    assert groups[1]["matcher"] == "Bash"
    assert groups[1]["hooks"][0]["command"] == "/venv/bin/episodic hook post-tool-failure"
    again = merge_hooks(plan)
    assert again is not None and not again.changed  # idempotent
    merge_hooks(claude_code_plan(tmp_path, executable="/venv/bin/episodic", failure_hook=False))
    assert json.loads(settings_file.read_text())["hooks"]["PostToolUseFailure"] == [theirs]
