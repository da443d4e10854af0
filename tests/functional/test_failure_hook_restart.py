"""The first failure after the local server went away is not lost (issue 50, item 12): the failure hook, run
exactly as `setup claude-code --write` registered it (a subprocess, Claude Code's PostToolUseFailure
payload), finds no server, starts one and waits for it within its budget, as the prompt hook does, and
injects the fix of the indexed session that met the same error."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits.client_env import bare_env, stop_spawned_server, wait_until_closed
from test_failure_hook_cli import set_up_user

# what the hook does, not how fast: a generous budget (wall time from its process start, a loaded machine)
GENEROUS_BUDGET = {"EPISODIC_HOOK_BUDGET_SECONDS": "60"}
ERROR = (
    "Exit code 1\n# example.com/shop/internal/paths\ninternal/paths/paths.go:149:28: undefined: regexp\n"
    "FAIL\texample.com/shop/internal/paths [build failed]"
)


@pytest.fixture()
def user(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    home = tmp_path / "episodic-home"
    try:
        home, user_home, _ = set_up_user(tmp_path, ["setup", "claude-code", "--write"])
        yield home, user_home
    finally:
        stop_spawned_server(home)


def failure_hook_command(user_home: Path) -> str:
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["PostToolUseFailure"]
    return str(group["hooks"][0]["command"])


def test_the_first_failure_after_the_server_stopped_gets_its_fix(user: tuple[Path, Path]) -> None:
    home, user_home = user
    port = int((home / "config.toml").read_text().split("port = ")[1].split()[0])
    stop_spawned_server(home)  # the server setup left answering is gone (a reboot, a crash)
    wait_until_closed(port)
    (home / "serve.started").unlink(missing_ok=True)  # setup's start is long past
    (home / "logs" / "hook.log").unlink(missing_ok=True)
    payload = {
        "session_id": "now-1",
        "cwd": str(user_home / "project"),
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "go test ./..."},
        "tool_use_id": "toolu_1",
        "error": ERROR,
        "is_interrupt": False,
    }
    done = subprocess.run(
        failure_hook_command(user_home),
        shell=True,
        input=json.dumps(payload),
        env=bare_env(home, user_home, **GENEROUS_BUDGET),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == ""
    log = (home / "logs" / "hook.log").read_text()
    assert "started `episodic serve` in the background" in log, log
    output = json.loads(done.stdout)["hookSpecificOutput"]  # this very failure, not only the next one
    assert output["hookEventName"] == "PostToolUseFailure"
    assert "regexp" in output["additionalContext"], output
    assert "ok: injected the fix of an earlier session" in log, log
