"""The viewer's name is its secret: a request that does not name this run's `<32 hex>.localhost:<port>`
learns nothing of it. The port is world-readable (/proc/net/tcp); a refusal that named the host handed
any local user the name, and with it a port of their own on that name, where the browser sends the cookie.
So every wrong Host gets the same bare 421, and no byte of it (status line, headers, body) carries the
name or its hex."""

from __future__ import annotations

import re
import secrets
import socket

import pytest

from ui.conftest import World


def raw_exchange(port: int, request: bytes) -> bytes:
    """The whole response as it came off the socket: status line, headers and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def ask_with_host(port: int, host: str | None, cookie: str = "", path: str = "/episode/x?key=abc") -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Connection: close", "Accept: text/html"]
    lines += [f"Host: {host}"] if host is not None else []
    lines += [f"Cookie: {cookie}"] if cookie else []
    return raw_exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode())


def without_date(response: bytes) -> bytes:
    return re.sub(rb"(?im)^Date: [^\r\n]*\r\n", b"", response)


WRONG_HOSTS = {
    "none": None,
    "x": "x",
    "address": "127.0.0.1:{port}",
    "address without port": "127.0.0.1",
    "localhost": "localhost:{port}",
    "another name": secrets.token_hex(16) + ".localhost:{port}",
    "the name on another port": "{name}:1",
    "the name without port": "{name}",
}


@pytest.mark.parametrize("with_secret", [False, True], ids=["no cookie", "with the secret"])
def test_every_wrong_host_gets_one_bare_421_that_names_nothing(world: World, with_secret: bool) -> None:
    guard = world.ui.guard
    hex_part = guard.name.split(".")[0].lower()
    cookie = f"episodic_ui={guard.secret}" if with_secret else ""
    answers = {}
    for label, host in WRONG_HOSTS.items():
        asked = None if host is None else host.format(port=guard.port, name=guard.name)
        response = ask_with_host(guard.port, asked, cookie)
        assert response.startswith(b"HTTP/1.1 421 "), (label, response[:200])
        text = response.decode("latin-1").lower()
        assert hex_part not in text, (label, response)
        assert hex_part[:8] not in text and hex_part[-8:] not in text, (label, response)  # no part of it
        assert "set-cookie" not in text, (label, response)
        answers[label] = without_date(response)
    assert len(set(answers.values())) == 1, answers  # the same for every wrong Host


def test_the_right_name_still_gets_the_viewer(world: World) -> None:
    guard = world.ui.guard
    response = ask_with_host(guard.port, f"{guard.name}:{guard.port}", f"episodic_ui={guard.secret}", "/")
    assert response.startswith(b"HTTP/1.1 200 "), response[:200]
