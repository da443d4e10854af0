"""Another program on the hook's port (issue 41): `doctor` runs the hook command as Claude Code runs it and
fails naming that program; `setup claude-code --write` moves this home's server to a free port, saves it and
ends with a hook that answers (the real Claude Code CLI's first prompt injected); pinned to the taken port,
setup exits non-zero."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, PROMPT, bare_env, free_port, stop_spawned_server, wait_for_port


@pytest.fixture()
def foreign_port() -> Iterator[int]:
    """A plain `python -m http.server` on loopback, on the port episodic is configured for."""
    with foreign_server(free_port()) as port:
        yield port


@contextlib.contextmanager
def foreign_server(port: int) -> Iterator[int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def _user(tmp: Path, port: int) -> tuple[Path, Path]:
    home, user_home = tmp / "episodic-home", tmp / "user-home"
    home.mkdir()
    (user_home / "project").mkdir(parents=True)
    # the holdout experiment withholds memory from about 1 session in 10 by Claude Code's random session id:
    # off, so the first prompt's card is what is checked
    (home / "config.toml").write_text(f'embedder = "hashing"\nport = {port}\nexperiment_enabled = false\n')
    assert run(home, user_home, "index", str(DEMO)).returncode == 0
    return home, user_home


def run(home: Path, user_home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return warm_cli.run(
        [str(EPISODIC), *args],
        env=bare_env(home, user_home, **env),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=user_home / "project",
    )


def _configured_port(home: Path) -> int:
    return int(tomllib.loads((home / "config.toml").read_text())["port"])


def test_doctor_runs_the_hook_and_names_the_program_on_the_port(tmp_path: Path) -> None:
    home, user_home = _user(tmp_path, free_port())
    foreign_port = _configured_port(home)
    # time for the moved server to answer within the probe's prompt: the report must not hang on that speed
    with open(home / "config.toml", "a", encoding="utf-8") as config:
        config.write("hook_budget_seconds = 20\n")
    try:  # wired while nothing listens (hook_autostart off: setup starts no server), then the program comes
        wired = run(home, user_home, "setup", "claude-code", "--write", EPISODIC_HOOK_AUTOSTART="false")
        assert wired.returncode == 0, wired.stderr
        with foreign_server(foreign_port):
            doctor = run(home, user_home, "doctor")
        assert doctor.returncode == 1, doctor.stdout
        named = f"another program answers at 127.0.0.1:{foreign_port} (HTTP 501, Server: SimpleHTTP/"
        assert f"[fail] server reachable: {named}" in doctor.stdout, doctor.stdout
        assert f"-m http.server {foreign_port} --bind 127.0.0.1]" in doctor.stdout  # its process, by /proc
        hook_line = next(line for line in doctor.stdout.splitlines() if "prompt hook:" in line)
        assert hook_line.startswith(f"[fail] prompt hook: fail: {named}"), hook_line
        moved = _configured_port(home)  # the hook did what it does on a prompt: moved and said so
        assert moved != foreign_port
        assert f"moved this home's server to port {moved} (saved in {home / 'config.toml'})" in hook_line
    finally:
        stop_spawned_server(home)


def test_setup_moves_to_a_free_port_and_ends_with_a_hook_that_answers(
    tmp_path: Path, foreign_port: int
) -> None:
    home, user_home = _user(tmp_path, foreign_port)
    try:
        setup = run(home, user_home, "setup", "claude-code", "--write")
        assert setup.returncode == 0, setup.stdout + setup.stderr
        moved = _configured_port(home)
        assert moved != foreign_port
        assert f"another program answers at 127.0.0.1:{foreign_port}" in setup.stdout
        assert f"moved this home's server to port {moved} (saved in {home / 'config.toml'})" in setup.stdout
        assert f"answering at http://127.0.0.1:{moved}/mcp" in setup.stdout
        assert "prompt hook: ok: injected " in setup.stdout, setup.stdout
        doctor = run(home, user_home, "doctor")
        assert doctor.returncode == 0, doctor.stdout
        assert "[ok  ] prompt hook: ok: injected" in doctor.stdout
        claude_code_injects(home, user_home)
    finally:
        stop_spawned_server(home)


def claude_code_injects(home: Path, user_home: Path) -> None:
    """The real Claude Code CLI (offline: `claude -p` runs the hook before it stops for lack of a login)."""
    from test_claude_code_cli import CLAUDE, GENEROUS_BUDGET, claude, generous_hook_timeout, hook_responses

    if not CLAUDE.exists():
        pytest.skip(f"Claude Code CLI not installed at {CLAUDE}")
    generous_hook_timeout(user_home)
    args = ("-p", PROMPT, "--output-format", "stream-json", "--verbose", "--include-hook-events")
    done = claude(user_home, home, *args, **GENEROUS_BUDGET)
    (response,) = hook_responses(done.stdout)
    context = json.loads(response["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert "Biome" in context and "<episodic-memory-context" in context


def test_setup_pinned_to_the_taken_port_exits_non_zero(tmp_path: Path, foreign_port: int) -> None:
    home, user_home = _user(tmp_path, foreign_port)
    try:
        setup = run(home, user_home, "setup", "claude-code", "--write", EPISODIC_PORT=str(foreign_port))
        assert setup.returncode == 1, setup.stdout
        assert "the prompt hook cannot be made to answer" in setup.stderr
        assert f"another program answers at 127.0.0.1:{foreign_port}" in setup.stderr
        assert "set another free port (EPISODIC_PORT)" in setup.stderr
        assert _configured_port(home) == foreign_port  # pinned: nothing moved
    finally:
        stop_spawned_server(home)
