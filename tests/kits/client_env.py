"""A fresh user as a client sees them: temporary HOME, no venv on PATH, a demo index, the default setup."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kits import warm_cli

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"
BIN = Path(sys.executable).parent  # the venv's bin folder, kept off the client's PATH
EPISODIC = BIN / "episodic"
# a prompt whose closest verified demo card is the Biome lint one
PROMPT = "npm run check passes locally but the GitHub Actions job fails with Biome lint errors, why?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def episodic(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m episodic ARGS` in the test's HOME and EPISODIC_HOME (the environment the fixture set)."""
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        cwd=cwd,
    )


def isolate(env: pytest.MonkeyPatch, home: Path, user_home: Path | None = None) -> None:
    """The environment `episodic_home` gives a test, for `home` and `user_home` (default: its sibling
    `user-home`): no agent folder or EPISODIC_* setting of the machine's own leaks in."""
    for name in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "CODEX_HOME", "GEMINI_CLI_HOME"):
        env.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("EPISODIC_") and name != "EPISODIC_TEST_TRANSCRIPTS":
            env.delenv(name, raising=False)
    env.setenv("EPISODIC_HOME", str(home))
    env.setenv("HOME", str(user_home or home.parent / "user-home"))


DemoIndexed = tuple[Path, subprocess.CompletedProcess[str]]


def index_demo(folder: Path, config: str) -> DemoIndexed:
    """A home under `folder` with `config` and the demo corpus indexed on purpose (`index DEMO --json`)."""
    home = folder / "episodic-home"
    home.mkdir()
    (folder / "user-home").mkdir()
    (home / "config.toml").write_text(config)
    with pytest.MonkeyPatch.context() as env:
        isolate(env, home)
        return home, episodic("index", str(DEMO), "--json")


def bare_env(home: Path, user_home: Path, **extra: str) -> dict[str, str]:
    """What a user's shell gives Claude Code: no venv on PATH, no EPISODIC_* but the home folder (and the
    PYTHONPATH a checkout's tests run under, so the code under test is what runs)."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN)
    under_test = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}  # a worktree's code, when set
    return {
        "PATH": path,
        "HOME": str(user_home),
        "EPISODIC_HOME": str(home),
        "LANG": "C.UTF-8",
        **under_test,
        **extra,
    }


def index_and_set_up(tmp: Path, **extra: str) -> tuple[Path, Path, int]:
    """Demo index (hashing embedder, a free port in the config), then `episodic setup claude-code --write`
    (which leaves the local server answering)."""
    home, user_home = tmp / "episodic-home", tmp / "user-home"
    home.mkdir()
    user_home.mkdir()
    port = free_port()
    (home / "config.toml").write_text(  # the holdout withholds 1 session in 10: off, the wiring is checked
        f'embedder = "hashing"\nport = {port}\nexperiment_enabled = false\n'
    )
    for args in (["index", str(DEMO)], ["setup", "claude-code", "--write"]):
        done = warm_cli.run(
            [str(EPISODIC), *args],
            env=bare_env(home, user_home, **extra),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    return home, user_home, port


def wait_for_port(port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"no server came up on port {port}")


def stop_spawned_server(home: Path) -> None:
    """End the server setup or the hook started (by the pid it recorded; it leads its own session)."""
    pid_file = home / "serve.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)


def wait_until_closed(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return
        time.sleep(0.2)
    raise AssertionError(f"the server on port {port} did not stop")
