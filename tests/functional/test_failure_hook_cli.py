"""Recall at the moment of failure with the real Claude Code CLI (.tools/claude), offline: a loopback stand-in
for the Messages API (tests/kits/fake_model_kit.py) makes the real CLI run one Bash command that fails, and the
`PostToolUseFailure` hook that `episodic setup claude-code --write` registered answers in the stream's hook
events — with the fix of the indexed session that met the same error (another path, another line), and with
nothing for an error no session met. Skipped when the CLI is absent."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import EPISODIC, bare_env, free_port, stop_spawned_server, wait_for_port
from kits.fake_model_kit import fake_model
from kits.session_builder import SessionWriter
from test_claude_code_cli import CLAUDE, GENEROUS_BUDGET, OFFLINE

pytestmark = pytest.mark.skipif(not CLAUDE.exists(), reason=f"Claude Code CLI not installed at {CLAUDE}")

FIXED_SESSION = "6f1c2a9e-4b7d-4c1e-9a55-2d0e8f3b7c11"
# a stand-in `go`: the compile error the indexed session met, at another path and line; `go build` an unseen one
FAKE_GO = """#!/bin/sh
if [ "$1" = "test" ]; then
  echo "# example.com/shop/internal/paths" >&2
  echo "internal/paths/paths.go:149:28: undefined: regexp" >&2
  echo "FAIL	example.com/shop/internal/paths [build failed]" >&2
  exit 1
fi
echo "cmd/shop/main.go:7:2: undefined: neverSeenHelperZq" >&2
exit 1
"""


def _indexed_session(folder: Path) -> None:
    """A past session: `go test` failed with `undefined: regexp`, the agent found the cause, edited the file,
    and the same check passed."""
    (
        SessionWriter(FIXED_SESSION, "2026-02-15", cwd="/home/dev/shop")
        .prompt("go test fails after I cleaned up the imports in the paths package, can you fix it?")
        .tool(
            "Bash",
            {"command": "go test ./..."},
            "Exit code 1\n# example.com/shop/paths\npaths/paths.go:12:5: undefined: regexp\n"
            "FAIL\texample.com/shop/paths [build failed]",
            error=True,
        )
        .reply("The issue is that the regexp import was removed while nonAlphanumericRegex still uses it.")
        .tool(
            "Edit", {"file_path": "/home/dev/shop/paths/paths.go", "old_string": "a", "new_string": "b"}, "ok"
        )
        .tool("Bash", {"command": "go test ./..."}, "ok  \texample.com/shop/paths\t0.012s")
        .reply("Fixed: the import is back and go test passes.")
        .write(folder)
    )


def set_up_user(tmp: Path, *setups: list[str], config: str = "") -> tuple[Path, Path, Path]:
    """(episodic home, user home, a bin folder with the stand-in `go`): the session indexed, `setups` run
    (`config`: more lines of the config file)."""
    home, user_home, tools = tmp / "episodic-home", tmp / "user-home", tmp / "bin"
    home.mkdir()
    (user_home / "project").mkdir(parents=True)
    tools.mkdir()
    (tools / "go").write_text(FAKE_GO)
    (tools / "go").chmod(0o755)
    _indexed_session(tmp / "sessions")
    (home / "config.toml").write_text(f'embedder = "hashing"\nport = {free_port()}\n{config}')
    for args in (["index", str(tmp / "sessions")], *setups):
        done = warm_cli.run(
            [str(EPISODIC), *args], env=bare_env(home, user_home), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    return home, user_home, tools


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    tmp = tmp_path_factory.mktemp("failure-cli")
    home = tmp / "episodic-home"
    try:
        home, user_home, tools = set_up_user(tmp, ["setup", "claude-code", "--write"])
        settings = json.loads((user_home / ".claude" / "settings.json").read_text())
        for group in settings["hooks"]["PostToolUseFailure"]:  # what reaches the model, not how fast
            for hook in group["hooks"]:
                hook["timeout"] = 60
        (user_home / ".claude" / "settings.json").write_text(json.dumps(settings))
        yield home, user_home, tools
    finally:
        stop_spawned_server(home)


def failure_hook_responses(home: Path, user_home: Path, tools: Path, command: str) -> list[dict]:
    with fake_model(command) as base_url:
        env = bare_env(
            home,
            user_home,
            **OFFLINE,
            **GENEROUS_BUDGET,
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="sk-ant-test-not-real",
        )
        env["PATH"] = f"{tools}:{env['PATH']}"
        done = subprocess.run(
            [str(CLAUDE), "-p", "run the build", "--output-format", "stream-json", "--verbose",
             "--include-hook-events", "--allowedTools", "Bash"],
            env=env,
            cwd=user_home / "project",
            capture_output=True,
            text=True,
            timeout=180,
        )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert any(e.get("type") == "result" for e in events), done.stdout[-2000:] + done.stderr[-2000:]
    return [
        e
        for e in events
        if e.get("subtype") == "hook_response" and e.get("hook_event") == "PostToolUseFailure"
    ]


def test_a_failure_an_indexed_session_got_past_gets_its_fix(user: tuple[Path, Path, Path]) -> None:
    home, user_home, tools = user
    wait_for_port(int((home / "config.toml").read_text().split("port = ")[1].split()[0]))
    (response,) = failure_hook_responses(home, user_home, tools, "go test ./...")
    assert (response["outcome"], response["exit_code"], response["stderr"]) == ("success", 0, "")
    output = json.loads(response["stdout"])["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUseFailure"
    context = output["additionalContext"]
    assert "<episodic-memory-context" in context and "undefined: regexp" in context
    assert f"Session {FIXED_SESSION} of 2026-02-15 (get_episode with this id gives its card)" in context
    assert "regexp import was removed" in context  # what it turned out to be
    assert "paths.go" in context and "`go test ./...` passed" in context  # what ended it, the check


def test_an_error_no_session_met_gets_nothing(user: tuple[Path, Path, Path]) -> None:
    home, user_home, tools = user
    (response,) = failure_hook_responses(home, user_home, tools, "go build ./...")
    assert (response["outcome"], response["exit_code"], response["stdout"]) == ("success", 0, "")
    log = (home / "logs" / "hook.log").read_text()
    assert "post-tool-failure ok: no strong match (never got past in another session)" in log
