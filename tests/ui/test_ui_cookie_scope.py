"""Issue 52 item 1, with real Chromium: the viewer's secret is worth nothing to any other socket. Another local
user sees the viewer's address and port in /proc/net/tcp, binds another port on that address and lures the
user's browser there. Cookies are scoped by host, not port: with the viewer at an address, the browser sent
its cookie along, and that cookie read pages (the CSRF token with them) and vetoed a card. At this run's own
`<random>.localhost` name, the browser sends the lured page nothing, and a request naming the address (or
any other host) is refused even with the secret."""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

from episodic.kernel.models import ReviewState

from ui.conftest import World
from ui.sessions import SESSIONS

CARD = SESSIONS[0][0]


@contextmanager
def lure_on(address: str) -> Iterator[tuple[int, list[str]]]:
    """Another local user's server: another port on the viewer's address; it keeps every Cookie it is sent."""
    cookies: list[str] = []

    class Lure(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            cookies.append(self.headers.get("Cookie") or "")
            body = b"<!doctype html><title>nothing here</title><p>nothing here"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((address, 0), Lure)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield server.server_address[1], cookies
    finally:
        server.shutdown()
        server.server_close()


def ask(address: str, port: int, method: str, path: str, cookie: str, body: bytes = b"") -> tuple[int, str]:
    """What the other user does with a cookie: the viewer asked at the address it sees in /proc/net/tcp."""
    conn = http.client.HTTPConnection(address, port, timeout=30)
    try:
        headers = {"Cookie": cookie, "Origin": f"http://{address}:{port}"}
        if body:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body or None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_a_page_on_another_port_of_the_viewers_address_gets_nothing_usable(
    chromium: Any, world: World
) -> None:
    guard = world.ui.guard
    page = chromium.new_context().new_page()
    page.goto(world.ui.url)  # the user opens the viewer: the cookie is set
    assert "Review queue" in page.inner_text("body")
    with lure_on(guard.host) as (lure_port, sent):
        page.goto(f"http://{guard.host}:{lure_port}/")  # the user visits the other user's page
        assert "nothing here" in page.inner_text("body")
    assert sent, "the browser never reached the other server"
    read = []
    for cookie in [c for c in sent if c]:  # whatever it was sent, tried on the viewer
        status, text = ask(guard.host, guard.port, "GET", f"/episode/{CARD}", cookie)
        read += [status] if status == 200 else []
        token = re.search(r'name="csrf" value="([^"]+)"', text)
        form = {"csrf": token.group(1) if token else "", "action": "veto", "reason": "taken over"}
        ask(guard.host, guard.port, "POST", f"/episode/{CARD}", cookie, urlencode(form).encode())
    record = world.memory.store.get(world.settings.tenant, CARD)
    assert record is not None and record.review_state is not ReviewState.VETOED, "a card was vetoed"
    assert read == [], "a page was read with the cookie another server was sent"
    assert not any(guard.secret in cookie for cookie in sent), sent  # the secret never left for it


def test_the_secret_itself_opens_nothing_at_another_host_name(world: World) -> None:
    """Even holding the secret, a request that names the address (or `localhost`) and not this run's name
    is refused: a server another user binds can relay nothing into it."""
    guard, cookie = world.ui.guard, f"episodic_ui={world.ui.guard.secret}"
    assert ask(guard.host, guard.port, "GET", "/", cookie)[0] == 421
    conn = http.client.HTTPConnection(guard.host, guard.port, timeout=30)
    try:
        conn.request("GET", "/", headers={"Cookie": cookie, "Host": f"localhost:{guard.port}"})
        assert conn.getresponse().status == 421
    finally:
        conn.close()
    name = http.client.HTTPConnection(guard.host, guard.port, timeout=30)
    try:
        name.request("GET", "/", headers={"Cookie": cookie, "Host": f"{guard.name}:{guard.port}"})
        assert name.getresponse().status == 200  # the name and the secret: the viewer
    finally:
        name.close()
