"""Issue 40: authenticated requests first. 20 clients on four other loopback addresses (127.0.0.2..5, five
each) keep four connections each open to the real `episodic serve` classes (default limits), pipeline
requests without a token as fast as the server takes them and never read an answer; the prompt hook (as
Claude Code runs it: a subprocess) is answered three prompts in a row meanwhile. The flood is bounded in
count (80 connections at most) and time (it stops by itself), and the server holds nothing once it ends."""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from episodic.kernel.auth import LocalTokenStore
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.hook_kit import injected_context
from kits.mcp_testkit import ALPHA, build_memory, populate, rpc, settings_for

from tests.adversarial.test_slow_clients import _wait_until

ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
CLIENTS_PER_ADDRESS = 5
CONNECTIONS_PER_CLIENT = 4
FLOOD_SECONDS = 120.0  # the flood's own end, whatever the test does
GENEROUS = 30.0
# one unauthenticated request (no token), repeated back to back on the connection: pipelined
REQUEST = (
    b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
)
BURST = REQUEST * 200
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # Linux; Python names it from 3.12


class Flood:
    """The misbehaving clients: each keeps its connections open, reconnecting when one is closed."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.stop = threading.Event()
        self.ends = time.monotonic() + FLOOD_SECONDS
        self.connections_made = 0
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._client, args=(address,), daemon=True)
            for address in ADDRESSES
            for _ in range(CLIENTS_PER_ADDRESS)
        ]

    def _connect(self, address: str) -> socket.socket | None:
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # never reads: a small window fills
            # the local port is chosen at connect, per destination: a bind(0) per reconnect would take ports
            # from the one range every other test's loopback connects draw from (EADDRNOTAVAIL there)
            sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            sock.bind((address, 0))
            sock.settimeout(1.0)
            sock.connect(self.target)
            sock.setblocking(False)
        except OSError:
            return None
        with self._lock:
            self.connections_made += 1
        return sock

    def _client(self, address: str) -> None:
        held: list[socket.socket | None] = [None] * CONNECTIONS_PER_CLIENT
        unsent = [b""] * CONNECTIONS_PER_CLIENT  # what a connection still has to send of its burst
        try:
            while not self.stop.is_set() and time.monotonic() < self.ends:
                for i, sock in enumerate(held):
                    if sock is None:
                        held[i] = sock = self._connect(address)
                        if sock is None:
                            continue
                    try:
                        sent = sock.send(unsent[i] or BURST)  # what the server's window takes; no read
                        unsent[i] = (unsent[i] or BURST)[sent:]
                    except BlockingIOError:
                        pass  # the server stopped reading this connection: it holds the slot
                    except OSError:
                        sock.close()
                        held[i], unsent[i] = None, b""  # closed by the server: take another
                time.sleep(0.005)
        finally:
            for sock in held:
                if sock is not None:
                    sock.close()

    def __enter__(self) -> Flood:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=GENEROUS)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str, Path, BackgroundServer]]:
    settings = settings_for(tmp_path / "home")
    memory = build_memory(settings)
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    with BackgroundServer(build_endpoint(settings, memory)) as srv:  # the default limits of `episodic serve`
        yield srv.url, token, settings.home, srv


def _other_loopback_addresses_work() -> bool:
    with contextlib.suppress(OSError), socket.socket() as probe:
        probe.bind((ADDRESSES[-1], 0))
        return True
    return False


@pytest.mark.skipif(not _other_loopback_addresses_work(), reason="127.0.0.2..5 are not loopback here")
def test_the_hook_is_answered_while_20_unauthenticated_pipelining_clients_hold_connections(
    served: tuple[str, str, Path, BackgroundServer],
) -> None:
    url, token, home, srv = served
    limits = srv.httpd.limits
    most_held = 0  # the most connections the flood's addresses held at once
    with Flood(url) as flood:
        assert _wait_until(lambda: flood.connections_made >= 80), flood.connections_made  # the flood is on
        time.sleep(2.0)  # and has had time to take whatever the server lets it hold
        answered = []
        for _ in range(6):  # six prompts in a row; the flood's share of the server is sampled meanwhile
            prompt = threading.Thread(
                target=lambda: answered.append(
                    injected_context("pytest cannot find a fixture after moving conftest", url, token, home)
                )
            )
            prompt.start()
            while prompt.is_alive():
                most_held = max(most_held, sum(a in ADDRESSES for a in limits.held()))
                prompt.join(0.02)
        made = flood.connections_made
    assert len(answered) == 6 and all("pytest cannot find a fixture" in a for a in answered), answered
    # clients without a token hold at most a quarter of the slots, across their four addresses together
    assert most_held <= limits.max_connections // 4, (most_held, made)
    assert not any(thread.is_alive() for thread in flood.threads)  # the flood stopped by itself
    assert _wait_until(lambda: not limits.held()), limits.held()  # and left nothing held


def _closed(socks: list[socket.socket]) -> list[socket.socket]:
    """Those the server closed or answered (a 503): readable at once, the end or an answer to read."""
    return select.select(socks, [], [], 0)[0]


def test_an_authenticated_keep_alive_outlasts_64_connections_without_a_token(
    served: tuple[str, str, Path, BackgroundServer],
) -> None:
    """An agent's MCP connection, idle between two calls, keeps its slot while 64 clients without a token
    connect and dribble: they take the slots of the untrusted, and each other's."""
    url, token, _home, srv = served
    parts = urlsplit(url)
    agent = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=GENEROUS)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    ping = json.dumps(rpc("ping")).encode()
    agent.request("POST", "/mcp", ping, headers)
    assert agent.getresponse().read() and agent.sock is not None  # kept alive
    first = agent.sock
    dribblers = [socket.create_connection((parts.hostname, parts.port), timeout=GENEROUS) for _ in range(64)]
    try:
        for sock in dribblers:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")  # headers that never end
        assert _wait_until(lambda: len(srv.httpd.limits.held()) >= 17)
        # every dribbler has been admitted (held) or turned away (closed), or a second has passed
        _wait_until(lambda: len(srv.httpd.limits.held()) - 1 + len(_closed(dribblers)) >= 64, 1.0)
        agent.request("POST", "/mcp", ping, headers)
        response = agent.getresponse()
        assert response.status == 200 and json.loads(response.read())["result"] == {}
        assert agent.sock is first  # the same connection: it was never closed to make room
    finally:
        agent.close()
        for sock in dribblers:
            sock.close()
