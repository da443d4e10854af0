"""The prompt hook as Claude Code runs it (a subprocess): every failure path exits 0, prints nothing,
and logs one line; the success path injects verified episodes, phrased as facts, inside the marker."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from episodic.kernel.auth import LocalTokenStore
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.plumbing.marker import INJECTED_CLOSE, INJECTED_OPEN, strip_injected
from kits.mcp_testkit import ALPHA, build_memory, populate, settings_for

PROMPT = "pytest cannot find my fixture since I moved the conftest into a subpackage, why?"
# The budget is generous: on a loaded 2-core machine interpreter start-up alone can take a second, and
# these tests are about which path the hook takes, not its speed. The slow server takes 60 s, so ending
# within the budget plus generous slack proves the cut-off without depending on the machine's load.
BUDGET = 5.0
# the slow server's test waits out the whole budget: a shorter one (still many start-ups long), same relation
SLOW_SERVER_BUDGET = 2.0
SLOW_SERVER_SECONDS = 60.0
SLACK = 10.0  # start-up and exit on a loaded machine: far below the slow server


def run_hook(
    home: Path,
    stdin: str,
    url: str | None = None,
    token: str | None = "epi_x",
    budget: float = BUDGET,
    **extra_env: str,
) -> tuple[int, str, float]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "EPISODIC_HOME": str(home),
        "EPISODIC_HOOK_AUTOSTART": "false",  # these are fault tests; test_hook_autostart starts servers
        "EPISODIC_EXPERIMENT_ENABLED": "false",  # no holdout here; test_experiment_hook runs the experiment
        **(
            {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
        ),  # the code under test
        **extra_env,
    }
    env["EPISODIC_HOOK_BUDGET_SECONDS"] = str(budget)
    if url:
        env["EPISODIC_URL"] = url
    if token:
        env["EPISODIC_TOKEN"] = token
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "episodic.hooks.prompt"],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=SLOW_SERVER_SECONDS,
    )
    return proc.returncode, proc.stdout, time.monotonic() - started


def log_lines(home: Path) -> list[str]:
    path = home / "logs" / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def hook_input(prompt: str = PROMPT) -> str:
    return json.dumps(
        {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp", "prompt": prompt}
    )


class _Fake(BaseHTTPRequestHandler):
    behave: Callable[[BaseHTTPRequestHandler], None]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).behave(self)

    def log_message(self, *args: object) -> None:
        pass


def _reply(status: int, body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def behave(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return behave


def _slow(handler: BaseHTTPRequestHandler) -> None:
    time.sleep(SLOW_SERVER_SECONDS)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the hook gave up waiting: as intended
        _reply(200, b"{}")(handler)


@pytest.fixture()
def fake_server() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler], None]], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(behave: Callable[[BaseHTTPRequestHandler], None]) -> str:
        handler = type("Fake", (_Fake,), {"behave": staticmethod(behave)})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/mcp"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def _result(results: list[dict]) -> bytes:
    answer = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [], "structuredContent": {"results": results}, "isError": False},
    }
    return json.dumps(answer).encode()


UNVERIFIED_HIT = {
    "session_id": "u1",
    "project": "p",
    "date": "2026-01-01",
    "score": 0.9,
    "similarity": 0.9,
    "confidence": "strong",
    "card": {"problem": "p", "insight": "i", "outcome": "unverified"},
}
FAULTS: dict[str, tuple[Callable[[BaseHTTPRequestHandler], None] | None, str]] = {
    "server down": (None, "unreachable"),
    "slow server": (_slow, "timed out"),
    "http 500": (_reply(500, b'{"error": "boom"}'), "HTTP 500"),
    "http 401": (_reply(401, b"{}"), "HTTP 401"),
    "bad json": (_reply(200, b"<html>not json"), "bad response"),
    "wrong shape": (_reply(200, b'{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}'), "bad response"),
    "tool error": (
        _reply(
            200,
            b'{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"nope"}]}}',
        ),
        "tool error",
    ),
    "no results": (_reply(200, _result([])), "no confident or weak match"),
    "only unverified": (_reply(200, _result([UNVERIFIED_HIT])), "no confident or weak match"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_server_faults_exit_0_silently_within_budget(tmp_path: Path, fake_server, fault: str) -> None:
    behave, logged = FAULTS[fault]
    budget = SLOW_SERVER_BUDGET if fault == "slow server" else BUDGET
    url = fake_server(behave) if behave else _closed_port_url()
    home = tmp_path / "home"
    code, stdout, elapsed = run_hook(home, hook_input(), url, budget=budget)
    assert (code, stdout) == (0, "")
    assert elapsed < budget + SLACK, elapsed
    lines = log_lines(home)
    assert len(lines) == 1 and logged in lines[0], lines


@pytest.mark.parametrize(
    ("stdin", "logged"),
    [
        ("not json at all", "bad stdin"),
        ("", "bad stdin"),
        ("[1, 2]", "bad stdin"),
        ('{"prompt": 5}', "bad stdin"),
        (hook_input("/compact keep the important parts of this"), "slash command"),
        (hook_input("fix it"), "short prompt"),
        (hook_input("reconfigure kubernetes deployments"), "short prompt"),
    ],
)
def test_bad_or_skipped_input_exits_0_silently(tmp_path: Path, stdin: str, logged: str) -> None:
    home = tmp_path / "home"
    code, stdout, _ = run_hook(home, stdin, _closed_port_url())
    assert (code, stdout) == (0, "")
    lines = log_lines(home)
    assert len(lines) == 1 and logged in lines[0], lines


def test_broken_config_exits_0_silently_and_logs_its_file_and_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("this is = not [valid toml")
    code, stdout, _ = run_hook(home, hook_input(), url=None, token=None)
    assert (code, stdout) == (0, "")
    line = log_lines(home)[0]
    assert f"{home / 'config.toml'} is not valid TOML" in line and "(at line 1," in line, line


def test_missing_token_exits_0_silently(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code, stdout, _ = run_hook(home, hook_input(), url=None, token=None)
    assert (code, stdout) == (0, "")
    assert "missing config (no token" in log_lines(home)[0]


def test_hook_logs_never_contain_the_prompt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_hook(home, hook_input(PROMPT + " AKIAIOSFODNN7EXAMPLE"), _closed_port_url())
    assert "AKIAIOSFODNN7EXAMPLE" not in (home / "logs" / "hook.log").read_text()


def test_success_injects_verified_episodes_as_facts(tmp_path: Path) -> None:
    server_home = tmp_path / "server"
    settings = settings_for(server_home)
    memory = build_memory(settings)
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    home = tmp_path / "home"
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        code, stdout, _ = run_hook(home, hook_input(), server.url, token)
        wrong_code, wrong_stdout, _ = run_hook(home, hook_input(), server.url, "epi_wrong")
    assert code == 0
    output = json.loads(stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    context = output["additionalContext"]
    assert context.startswith(INJECTED_OPEN) and context.endswith(INJECTED_CLOSE)
    assert strip_injected(context) == ("", 1)  # the parser removes it whole: never re-indexed
    assert len(context) <= 4000
    assert "A close past match (2026-01-12, project shop, similarity" in context
    assert "alpha-pytest-fixture" in context and "beta" not in context
    assert "alpha-docker-cache" not in context  # unverified episodes are never injected
    assert (wrong_code, wrong_stdout) == (0, "")
    lines = log_lines(home)
    assert len(lines) == 2 and "injected" in lines[0] and "HTTP 401" in lines[1]


def test_a_remote_endpoint_goes_through_the_configured_proxy(tmp_path: Path, fake_server) -> None:
    verified = {**UNVERIFIED_HIT, "card": {**UNVERIFIED_HIT["card"], "outcome": "verified"}}
    seen: list[str] = []

    def proxy(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.path)
        _reply(200, _result([verified]))(handler)

    proxy_url = fake_server(proxy).removesuffix("/mcp")
    home = tmp_path / "home"
    url = "http://memory.example.invalid/mcp"  # never resolved: the proxy answers
    code, stdout, _ = run_hook(home, hook_input(), url, http_proxy=proxy_url)
    assert code == 0 and seen == [url, url]  # search_traces, then recall_similar (scratch memory)
    assert "A close past match (2026-01-01, project p, similarity 0.90) found: i" in stdout


def _chunked(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def behave(handler: BaseHTTPRequestHandler) -> None:
        handler.protocol_version = "HTTP/1.1"
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for start in range(0, len(body), 50):
            piece = body[start : start + 50]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")

    return behave


def test_a_chunked_answer_is_read(tmp_path: Path, fake_server) -> None:
    verified = {**UNVERIFIED_HIT, "card": {**UNVERIFIED_HIT["card"], "outcome": "verified"}}
    url = fake_server(_chunked(_result([verified])))
    code, stdout, _ = run_hook(tmp_path / "home", hook_input(), url)
    assert code == 0 and "found: i" in json.loads(stdout)["hookSpecificOutput"]["additionalContext"]


def test_url_and_token_come_from_the_config_file_when_env_is_unset(tmp_path: Path, fake_server) -> None:
    verified = {**UNVERIFIED_HIT, "card": {**UNVERIFIED_HIT["card"], "outcome": "verified"}}
    url = fake_server(_reply(200, _result([verified])))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'url = "{url}"\ntoken = "epi_from_file"\nhook_max_chars = 900\n')
    code, stdout, _ = run_hook(home, hook_input(), url=None, token=None)
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and "found: i" in context and len(context) <= 900


def test_review_required_names_the_real_cause_when_nothing_is_approved(tmp_path: Path, fake_server) -> None:
    unapproved = {
        **UNVERIFIED_HIT,
        "card": {**UNVERIFIED_HIT["card"], "outcome": "verified"},
        "review": "unreviewed",
    }  # type: ignore[dict-item]
    url = fake_server(_reply(200, _result([unapproved])))
    home = tmp_path / "home"
    code, stdout, _ = run_hook(home, hook_input(), url, EPISODIC_REVIEW_REQUIRED="true")
    assert (code, stdout) == (0, "")
    lines = log_lines(home)
    assert len(lines) == 1 and "no approved card matched" in lines[0], lines
    assert "no sufficiently similar" not in lines[0]
