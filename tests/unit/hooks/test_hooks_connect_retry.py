"""The prompt hook's request on a machine out of loopback ports for a moment: a connect that fails with
EADDRNOTAVAIL is tried again within the hook's deadline and the answer arrives; past the deadline it is a
timeout, never "server unreachable"."""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.hooks import server_client as hook_server
from episodic.hooks.payload import HookSkip
from episodic.kernel.auth import LocalTokenStore
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.mcp_testkit import ALPHA, build_memory, populate, settings_for

QUERY = "pytest cannot find my fixture since I moved the conftest into a subpackage"


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    settings = settings_for(tmp_path / "home")
    memory = build_memory(settings)
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    with BackgroundServer(build_endpoint(settings, memory)) as srv:
        yield srv.url, token


def _out_of_ports(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[float]:
    """socket.create_connection fails `failures` times as the kernel does with no free local port; the
    times of every attempt are returned."""
    real = socket.create_connection
    attempts: list[float] = []

    def connect(*args, **kwargs):  # type: ignore[no-untyped-def]
        attempts.append(time.monotonic())
        if len(attempts) <= failures:
            raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", connect)
    return attempts


def test_a_connect_without_a_free_port_is_retried_and_answered(
    served: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = served
    attempts = _out_of_ports(monkeypatch, failures=5)
    hits = hook_server.ask_server(url, token, QUERY, timeout=60.0)
    assert len(attempts) == 6  # five refused for want of a port, the sixth connected
    assert hits and hits[0]["card"]["outcome"] == "verified"


def test_past_the_deadline_it_is_a_timeout_not_an_unreachable_server(
    served: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = served
    attempts = _out_of_ports(monkeypatch, failures=10_000)
    with pytest.raises(HookSkip) as raised:
        hook_server.ask_server(url, token, QUERY, timeout=0.5)
    assert len(attempts) > 1  # it did retry
    assert str(raised.value).startswith("fail: timed out after 0.50 s: no free local port"), raised.value


def test_another_connect_error_is_not_retried(
    served: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = served
    attempts: list[int] = []

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        attempts.append(1)
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    monkeypatch.setattr(socket, "create_connection", refused)
    with pytest.raises(HookSkip):
        hook_server.ask_server(url, token, QUERY, timeout=5.0)
    assert attempts == [1]  # a refused connect means no server: the hook starts one at once
