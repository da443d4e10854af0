"""Issue 31: bounded clients. A client that dribbles its request (a header line every few seconds, or a
byte at a time) is closed at the whole-request deadline; 64 of them never lock out the prompt hook's own
request; one address other than loopback holds at most its share. The real `episodic serve` and
`episodic ui` server classes on loopback, raw sockets; loops are bounded and every wait has a generous
deadline (the server's deadline is made short instead)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from episodic.hooks.prompt import ask_server
from episodic.kernel.auth import LocalTokenStore
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.mcp.protocol import HttpResponse
from kits.mcp_testkit import ALPHA, build_memory, populate, post, rpc, settings_for

GENEROUS = 30.0  # seconds: only a hung server takes this long


def _connect(url: str, source: str = "127.0.0.1") -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection(
        (parts.hostname, parts.port), timeout=GENEROUS, source_address=(source, 0)
    )
    return sock


def _closed_by_server(sock: socket.socket, steps: list[bytes], pause: float) -> int | None:
    """Send the steps one by one, `pause` apart; the index of the step at which the server had closed the
    connection (a send fails or a read sees the end), None when every step went through."""
    for i, step in enumerate(steps):
        try:
            sock.sendall(step)
        except OSError:
            return i
        sock.settimeout(pause)
        try:
            if sock.recv(100) == b"":
                return i
        except TimeoutError:
            pass  # still open, nothing said: the next step
        except OSError:
            return i
    return None


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str, BackgroundServer]]:
    settings = settings_for(tmp_path / "home")
    memory = build_memory(settings)
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    # the read timeout is long: only the whole-request deadline can close a dribbler here
    with BackgroundServer(
        build_endpoint(settings, memory), read_timeout=GENEROUS, request_deadline=1.0, max_connections=64
    ) as srv:
        yield srv.url, token, srv


def test_a_header_line_every_interval_is_closed_at_the_deadline(
    served: tuple[str, str, BackgroundServer],
) -> None:
    url, _token, _srv = served
    sock = _connect(url)
    steps = [b"POST /mcp HTTP/1.1\r\n"] + [f"X-Drip-{i}: {i}\r\n".encode() for i in range(60)]
    at = _closed_by_server(sock, steps, pause=0.25)  # 60 lines over 15 s; the deadline is 1 s
    sock.close()
    assert at is not None, "a client sending a header line every 0.25 s held its connection for 15 s"


def test_a_byte_at_a_time_inside_one_header_is_closed_at_the_deadline(
    served: tuple[str, str, BackgroundServer],
) -> None:
    url, _token, _srv = served
    sock = _connect(url)
    steps = [b"POST /mcp HTTP/1.1\r\nX-Long: "] + [b"a"] * 60  # one header line that never ends
    at = _closed_by_server(sock, steps, pause=0.25)
    sock.close()
    assert at is not None


def test_the_hooks_request_works_while_64_slow_clients_hold_connections(
    served: tuple[str, str, BackgroundServer],
) -> None:
    url, token, srv = served
    srv.httpd.limits.deadline = GENEROUS  # the 64 dribblers must not simply expire during this test
    slow = [_connect(url) for _ in range(64)]
    for sock in slow:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")  # headers that never end
    # they hold what connections without a token may (issue 40: a quarter of the slots), no more
    cap = srv.httpd.limits.max_untrusted
    held_by_slow = _wait_until(lambda: len(srv.httpd.limits.held()) >= cap)
    assert held_by_slow and len(srv.httpd.limits.held()) == cap, srv.httpd.limits.held()
    for _ in range(3):  # the hook's own request, three prompts in a row
        hits = ask_server(url, token, "pytest cannot find a fixture after moving conftest", timeout=GENEROUS)
        assert hits and hits[0]["session_id"] == "alpha-pytest-fixture", hits
    status, _, body = post(url, rpc("ping"), {"Authorization": f"Bearer {token}"})
    assert status == 200 and json.loads(body)["result"] == {}
    assert len(srv.httpd.limits.held()) <= 64
    for sock in slow:
        sock.close()


def test_one_address_holds_at_most_its_share(tmp_path: Path) -> None:
    """127.0.0.2 is loopback too, but stands for a remote client here: the cap counts per address."""
    settings = settings_for(tmp_path / "home")
    endpoint = build_endpoint(settings, build_memory(settings))
    with BackgroundServer(endpoint, request_deadline=GENEROUS, max_connections_per_client=4) as srv:
        limits = srv.httpd.limits
        local = [_connect(srv.url) for _ in range(6)]  # 127.0.0.1, every local client: no per-address cap
        remote = [_connect(srv.url, "127.0.0.2") for _ in range(10)]
        for sock in local + remote:
            sock.sendall(b"POST /mcp HTTP/1.1\r\n")
        assert _wait_until(lambda: len(limits.held()) == 10), limits.held()
        assert limits.held().count("127.0.0.2") == 4 and limits.held().count("127.0.0.1") == 6
        assert _closed_by_server(remote[0], [b"X: 1\r\n"] * 4, pause=0.5) is not None  # the oldest went
        assert _closed_by_server(local[0], [b"X: 1\r\n"], pause=0.5) is None  # another client's stay
        for sock in local + remote:
            sock.close()


def test_only_a_server_busy_with_whole_requests_answers_503(tmp_path: Path) -> None:
    """Eviction takes only connections still waiting for their request; served ones keep their slot."""
    gate, entered = threading.Event(), threading.Semaphore(0)

    class Blocking:
        allowed_hosts = None

        def authorized(self, headers: object) -> bool:
            return True  # every request is served: the slots stay busy

        def handle(self, request: object) -> HttpResponse:
            entered.release()
            gate.wait(GENEROUS)
            return HttpResponse(200, {}, b"")

    with BackgroundServer(Blocking(), request_deadline=GENEROUS, max_connections=2) as srv:  # type: ignore[arg-type]
        busy = [_connect(srv.url) for _ in range(2)]
        for sock in busy:
            sock.sendall(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")  # whole requests, being served
        assert all(entered.acquire(timeout=GENEROUS) for _ in busy)
        extra = _connect(srv.url)
        assert extra.recv(100).startswith(b"HTTP/1.1 503")
        gate.set()
        for sock in [*busy, extra]:
            sock.close()


def _wait_until(condition: object, limit: float = GENEROUS) -> bool:
    ends = time.monotonic() + limit
    while time.monotonic() < ends:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_the_viewer_closes_dribblers_and_serves_others_meanwhile(tmp_path: Path) -> None:
    from episodic.plumbing.http_clients import ClientLimits
    from episodic.ui.data import LocalSource
    from episodic.ui.server import BackgroundUi
    from episodic.ui.views import Viewer

    settings = settings_for(tmp_path / "home")
    memory = build_memory(settings)
    populate(memory)
    viewer = Viewer(LocalSource(memory), ALPHA, eval_dir=tmp_path / "eval", dream_dir=tmp_path / "dream")
    with BackgroundUi(viewer, limits=ClientLimits(deadline=1.0, max_connections=8)) as ui:
        slow = [_connect(ui.base + "/") for _ in range(8)]
        for sock in slow:
            sock.sendall(b"GET / HTTP/1.1\r\n")
        opening = urlsplit(ui.url)
        conn = http.client.HTTPConnection(opening.hostname or "", opening.port, timeout=GENEROUS)
        conn.request("GET", f"{opening.path}?{opening.query}")  # the opening URL: sets the cookie
        assert conn.getresponse().status == 303
        conn.close()
        at = _closed_by_server(slow[-1], [f"X-Drip-{i}: {i}\r\n".encode() for i in range(60)], pause=0.25)
        assert at is not None
        for sock in slow:
            sock.close()
