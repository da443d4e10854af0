"""After `setup claude-code --write` alone, the prompt hook injects memory: it finds its token in the
config file, starts a detached `episodic serve` when none answers (failing open for that prompt), and
the next prompt is answered by that server. Runs the hook command exactly as setup wrote it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"
PROMPT = "npm run check passes locally but the GitHub Actions job fails with Biome lint errors, why?"
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bare_env(home: Path, user_home: Path) -> dict[str, str]:
    """What a user's shell gives Claude Code: no venv on PATH, no EPISODIC_* but the home folder."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != BIN)
    return {"PATH": path, "HOME": str(user_home), "EPISODIC_HOME": str(home), "LANG": "C.UTF-8"}


def stop_spawned_server(home: Path) -> None:
    pid_file = home / "serve.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)  # the server leads its own session (start_new_session)


@pytest.fixture()
def set_up(tmp_path: Path) -> Iterator[tuple[Path, Path, int]]:
    """A demo index, then the README's setup: `episodic setup claude-code --write`, nothing else."""
    home, user_home = tmp_path / "episodic-home", tmp_path / "user-home"
    home.mkdir()
    user_home.mkdir()
    port = free_port()
    (home / "config.toml").write_text(f'embedder = "hashing"\nport = {port}\n')
    env = bare_env(home, user_home)
    for args in (["index", str(DEMO)], ["setup", "claude-code", "--write"]):
        done = subprocess.run(
            [str(BIN / "episodic"), *args], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    try:
        yield home, user_home, port
    finally:
        stop_spawned_server(home)


def hook_command(user_home: Path) -> str:
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["UserPromptSubmit"]
    return str(group["hooks"][0]["command"])


def run_hook(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPT, "session_id": "s"})
    return subprocess.run(
        command, shell=True, input=payload, env=env, capture_output=True, text=True, timeout=30
    )


def wait_for_port(port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"no server came up on port {port}")


def test_the_hook_works_after_the_default_setup(set_up: tuple[Path, Path, int]) -> None:
    home, user_home, port = set_up
    command = hook_command(user_home)
    assert command == f"{BIN / 'episodic'} hook user-prompt-submit"  # absolute: the venv is not on PATH
    assert 'token = "epi_' in (home / "config.toml").read_text()
    env = bare_env(home, user_home)

    first = run_hook(command, env)
    assert first.returncode == 0 and first.stderr == ""
    log = (home / "logs" / "hook.log").read_text().splitlines()
    assert len(log) == 1
    if not first.stdout:  # the cold server missed this prompt's budget: fail open, say so in the log
        assert "started `episodic serve` in the background" in log[0]
    assert (home / "serve.pid").exists()

    wait_for_port(port)
    second = run_hook(command, env)
    assert second.returncode == 0, second.stderr
    context = json.loads(second.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Biome" in context and "A past session with a similar symptom" in context


def test_one_server_start_for_prompts_arriving_together(set_up: tuple[Path, Path, int]) -> None:
    home, user_home, port = set_up
    env = {**bare_env(home, user_home), "EPISODIC_HOOK_BUDGET_SECONDS": "0.5"}
    command = hook_command(user_home)
    procs = [
        subprocess.Popen(
            command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        for _ in range(4)
    ]
    for proc in procs:
        proc.communicate(json.dumps({"prompt": PROMPT}), timeout=30)
        assert proc.returncode == 0
    log = (home / "logs" / "hook.log").read_text()
    assert log.count("started `episodic serve` in the background") == 1, log
    wait_for_port(port)
