"""After `setup claude-code --write` alone, the prompt hook injects memory from the first prompt: setup
leaves the local server answering, and the hook finds its token in the config file. When that server is
gone, the hook starts a detached `episodic serve` (failing open for that prompt) and the next prompt is
answered by it. Runs the hook command exactly as setup wrote it."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import (
    BIN,
    EPISODIC,
    PROMPT,
    bare_env,
    index_and_set_up,
    stop_spawned_server,
    wait_for_port,
    wait_until_closed,
)
from kits.proc_kit import pids_with_args

# The hook's budget (1.5 s by default) is wall time from its own process start: on a loaded machine the
# interpreter alone can spend it. These tests are about what the hook does, not how fast: a generous,
# explicit budget, so they pass at any load (a slow answer is still an answer, never "no match").
GENEROUS_BUDGET = {"EPISODIC_HOOK_BUDGET_SECONDS": "60"}
HOOK_TIMEOUT = 120  # seconds a hook process may take here before the test calls it hung


@pytest.fixture()
def set_up(tmp_path: Path) -> Iterator[tuple[Path, Path, int]]:
    """A demo index, then the README's setup: `episodic setup claude-code --write`, nothing else."""
    home, user_home, port = index_and_set_up(tmp_path)
    try:
        yield home, user_home, port
    finally:
        stop_spawned_server(home)


def hook_command(user_home: Path) -> str:
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["UserPromptSubmit"]
    return str(group["hooks"][0]["command"])


def run_hook(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    session = f"autostart-{uuid.uuid4()}"  # a new session each time: a session is never given a card twice
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPT, "session_id": session})
    return subprocess.run(
        command, shell=True, input=payload, env=env, capture_output=True, text=True, timeout=HOOK_TIMEOUT
    )


def test_the_first_prompt_after_setup_is_served(set_up: tuple[Path, Path, int]) -> None:
    home, user_home, port = set_up
    command = hook_command(user_home)
    assert command == f"{BIN / 'episodic'} hook user-prompt-submit"  # absolute: the venv is not on PATH
    assert 'token = "epi_' in (home / "config.toml").read_text()
    pid = int((home / "serve.pid").read_text())  # started by setup, the way the hook starts one
    env = bare_env(home, user_home, **GENEROUS_BUDGET)

    first = run_hook(command, env)
    assert first.returncode == 0 and first.stderr == ""
    context = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Biome" in context and "A close past match" in context

    doctor = warm_cli.run(
        [str(EPISODIC), "doctor"], env=env, capture_output=True, text=True, timeout=120
    ).stdout
    assert f"[ok  ] server reachable: http://127.0.0.1:{port}/mcp (pid {pid}," in doctor, doctor


def test_the_hook_starts_a_server_when_none_answers(set_up: tuple[Path, Path, int]) -> None:
    home, user_home, port = set_up
    stop_spawned_server(home)  # the one setup left behind
    wait_until_closed(port)
    (home / "serve.started").unlink()  # setup's start is long past
    command = hook_command(user_home)
    env = bare_env(home, user_home, **GENEROUS_BUDGET)
    (home / "logs" / "hook.log").unlink(missing_ok=True)  # setup's and the first test's runs of the hook

    first = run_hook(command, env)
    assert first.returncode == 0 and first.stderr == ""
    log = (home / "logs" / "hook.log").read_text().splitlines()
    assert len(log) == 1
    if not first.stdout:  # the cold server missed this prompt's budget: fail open, say so in the log
        assert "started `episodic serve` in the background" in log[0]

    wait_for_port(port)
    second = run_hook(command, env)
    assert second.returncode == 0, second.stderr
    context = json.loads(second.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Biome" in context and "A close past match" in context


def servers_on(port: int) -> list[int]:
    """Pids of `episodic serve … --port PORT` processes (Linux /proc)."""
    return pids_with_args("episodic", "serve", str(port))


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="counts processes through /proc")
def test_one_server_start_for_prompts_arriving_together(set_up: tuple[Path, Path, int]) -> None:
    home, user_home, port = set_up
    stop_spawned_server(home)  # the one setup left behind
    wait_until_closed(port)
    (home / "serve.started").unlink()
    env = bare_env(home, user_home, **GENEROUS_BUDGET)  # the claim on the start decides, not the clock
    command = hook_command(user_home)
    procs = [
        subprocess.Popen(
            command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        for _ in range(4)
    ]
    outputs = []
    for proc in procs:
        out, _ = proc.communicate(json.dumps({"prompt": PROMPT}), timeout=HOOK_TIMEOUT)
        assert proc.returncode == 0
        outputs.append(out)
    log = (home / "logs" / "hook.log").read_text()
    assert log.count("started `episodic serve` in the background") == 1, log
    assert servers_on(port) == [int((home / "serve.pid").read_text())]
    wait_for_port(port)
    # the others waited for that one server within their budget: every prompt got its memory
    for out in outputs:
        assert "Biome" in json.loads(out)["hookSpecificOutput"]["additionalContext"], (out, log)
