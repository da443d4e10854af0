"""The warm `python -m episodic` of the tests (tests/kits/warm_cli.py) gives what a real process gives."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kits import warm_cli

EPISODIC = [sys.executable, "-m", "episodic"]
DEMO = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return True
    return False


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")}
    return full | {"HOME": str(tmp_path / "user"), "EPISODIC_HOME": str(tmp_path / "home")}


def both(
    monkeypatch: pytest.MonkeyPatch, args: list[str], command: list[str] = EPISODIC, **kwargs: object
) -> list[tuple[int, object, object]]:
    """(exit code, stdout, stderr) of the call run cold (a real process), then warm."""
    out = []
    for cold in ("1", "0"):
        monkeypatch.setenv(warm_cli.COLD_SWITCH, cold)
        done = warm_cli.run([*command, *args], timeout=300, **kwargs)  # type: ignore[arg-type]
        out.append((done.returncode, done.stdout, done.stderr))
    return out


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["--help"], None),
        (["no-such-command"], None),
        (["show", "abcdef12"], None),
        (
            ["hook", "user-prompt-submit"],
            '{"hook_event_name": "UserPromptSubmit", "prompt": "x", "session_id": "s"}',
        ),
    ],
)
def test_a_warm_call_answers_as_a_real_process_does(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], args: list[str], stdin: str | None
) -> None:
    cold, warm = both(monkeypatch, args, env=env, input=stdin, capture_output=True, text=True)
    assert warm == cold


def test_bytes_in_and_out_and_the_cwd_reach_the_warm_process(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "home").mkdir()
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    cold, warm = both(
        monkeypatch, ["mcp"], env=env | {"EPISODIC_EMBEDDER": "hashing"}, input=ping, capture_output=True
    )
    assert warm[0] == cold[0] == 0 and warm[1] == cold[1] and b'"result": {}' in warm[1]
    # a relative path is read from the cwd given, not the test's
    cold, warm = both(
        monkeypatch,
        ["index", DEMO.name, "--json"],
        env=env | {"EPISODIC_EMBEDDER": "hashing"},
        cwd=DEMO.parent,
        capture_output=True,
        text=True,
    )
    assert warm[0] == cold[0] == 0, warm
    assert '"indexed": 6' in str(cold[1]) and '"unchanged": 6' in str(warm[1])  # the same home, seen again


def test_a_call_past_its_timeout_is_killed_and_raises_timeout_expired(env: dict[str, str]) -> None:
    port = free_port()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        warm_cli.run(
            [*EPISODIC, "serve", "--port", str(port)], env=env, capture_output=True, text=True, timeout=3
        )
    assert "listening on" in str(raised.value.stderr)
    assert refused(port)  # the server process was killed with the call, not left behind


def test_the_server_forks_from_one_thread_and_odd_calls_stay_real_processes(env: dict[str, str]) -> None:
    warm_cli.run([*EPISODIC, "--help"], env=env, capture_output=True, timeout=300)
    server = warm_cli._warm_server(warm_cli._startup_view(env))
    assert os.listdir(f"/proc/{server.process.pid}/task") == [str(server.process.pid)]
    assert warm_cli.goes_warm(EPISODIC, {"input": "x", "capture_output": True, "env": env})
    assert not warm_cli.goes_warm(EPISODIC, {"encoding": "utf-8"})  # a keyword the fork does not mimic
    assert not warm_cli.goes_warm([sys.executable, "-c", "pass"], {})
    assert not warm_cli.goes_warm(EPISODIC, {"stdout": sys.stdout})


@pytest.mark.parametrize("args", [["--help"], ["setup", "path"], ["doctor"]])
def test_the_console_script_in_a_users_bare_shell_answers_as_a_real_process_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]
) -> None:
    bare = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "user"),
        "EPISODIC_HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    script = [warm_cli.CONSOLE_SCRIPT]
    assert warm_cli.goes_warm(script, {"env": bare, "capture_output": True})
    cold, warm = both(monkeypatch, args, script, env=bare, capture_output=True, text=True)
    assert warm == cold
    assert warm_cli._warm_server(warm_cli._startup_view(bare)).env["LANG"] == "C.UTF-8"
    if args == ["--help"]:
        assert "Usage: episodic " in str(warm[1])  # argv[0] is the script, not `python -m episodic`
