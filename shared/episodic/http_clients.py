"""Bounded clients for our local HTTP servers (`episodic serve`, `episodic ui`): one deadline for a whole
request, a cap on connections per client address, and room for a new client when the server is full.

A per-read timeout alone let a client that sends one header line every few seconds hold its connection
(and its thread) forever, and 64 of them (the cap) locked every other client out, the prompt hook
included. So, from the moment a connection waits for a request (`ClientLimits.arm`), the request line,
headers and body must all arrive within `deadline` seconds: a watchdog thread shuts the socket at the
deadline, however slowly the bytes trickle. When the server is full, or one address holds its share, the
connection that has waited longest without delivering a whole request is closed to make room (the
dribblers, idle keep-alives); only when every slot is busy serving a complete request is a new
connection refused with 503. Every local client is 127.0.0.1 (or ::1), so the per-address cap applies to
other addresses only; on loopback the eviction is what keeps the hook's request working.

Stdlib only, like the servers.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REQUEST_DEADLINE_SECONDS = 10.0  # request line + headers + body, from when the connection waits for it
MAX_CONNECTIONS = 64  # one thread each
MAX_CONNECTIONS_PER_CLIENT = 16  # per source address but 127.0.0.1 / ::1 (every local client's)
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"


# the addresses every local client connects from (the hook, agents, a browser): one address, many clients
_LOCAL_SOURCES = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})


def _shared_by_local_clients(address: str) -> bool:
    return address in _LOCAL_SOURCES


@dataclass(eq=False)
class _Client:
    sock: socket.socket
    address: str
    waiting_since: float | None = None  # None: a whole request was read; it is being served
    expired: bool = field(default=False)


def _close(sock: socket.socket) -> None:
    """Wake the handler's blocked read (it sees the end of the stream); the server closes the socket."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class ClientLimits:
    """The connections a server holds, and who waits for what (see the module docstring)."""

    def __init__(
        self,
        deadline: float = REQUEST_DEADLINE_SECONDS,
        max_connections: int = MAX_CONNECTIONS,
        per_client: int = MAX_CONNECTIONS_PER_CLIENT,
    ) -> None:
        self.deadline = deadline
        self.max_connections = max_connections
        self.per_client = per_client
        self._clients: dict[socket.socket, _Client] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._watchdog = threading.Thread(target=self._watch, name="http-deadlines", daemon=True)
        self._watchdog.start()

    # ------------------------------------------------------------------ admission

    def admit(self, sock: socket.socket, address: str) -> bool:
        """Take the connection, closing the longest-waiting unfinished one if need be; False: refuse it."""
        with self._cond:
            mine = [c for c in self._clients.values() if c.address == address]
            if not _shared_by_local_clients(address) and len(mine) >= self.per_client:
                if not self._evict(mine):
                    return False
            elif len(self._clients) >= self.max_connections and not self._evict(self._clients.values()):
                return False
            self._clients[sock] = _Client(sock, address)
            return True

    def _evict(self, candidates: Any) -> bool:
        waiting = [c for c in candidates if c.waiting_since is not None and not c.expired]
        if not waiting:
            return False
        victim = min(waiting, key=lambda c: c.waiting_since)  # type: ignore[arg-type, return-value]
        self._expire(victim)
        return True

    def _expire(self, client: _Client) -> None:
        client.expired = True
        self._clients.pop(client.sock, None)  # its slot is free now; its thread ends at the closed socket
        _close(client.sock)

    def release(self, sock: socket.socket) -> None:
        with self._cond:
            self._clients.pop(sock, None)

    # ------------------------------------------------------------------ the deadline

    def arm(self, sock: socket.socket) -> None:
        """The connection now waits for a request: it has `deadline` seconds to deliver all of it."""
        with self._cond:
            client = self._clients.get(sock)
            if client is not None and not client.expired:
                client.waiting_since = time.monotonic()
                self._cond.notify()

    def request_read(self, sock: socket.socket) -> bool:
        """The whole request is in: stop its clock. False when its deadline passed (answer nothing)."""
        with self._cond:
            client = self._clients.get(sock)
            if client is None or client.expired:
                return False
            client.waiting_since = None
            return True

    def held(self) -> list[str]:
        """The address of every connection held (for tests and logs)."""
        with self._cond:
            return [c.address for c in self._clients.values()]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                waiting = [c for c in self._clients.values() if c.waiting_since is not None]
                for client in waiting:
                    if now - client.waiting_since >= self.deadline:  # type: ignore[operator]
                        self._expire(client)
                due = [c.waiting_since + self.deadline for c in waiting if not c.expired]  # type: ignore[operator]
                self._cond.wait(max(min(due) - now, 0.01) if due else None)


class BoundedServer(ThreadingHTTPServer):
    """A threaded HTTP server whose clients `ClientLimits` bounds (handlers: `BoundedHandler`)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, *args: Any, limits: ClientLimits | None = None, **kwargs: Any) -> None:
        self.limits = limits or ClientLimits()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.limits.admit(request, str(client_address[0])):  # full of served requests: say so at once
            try:
                request.settimeout(1.0)
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.limits.release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.limits.release(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # the client went away, or its deadline closed it
            return
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        self.limits.close()
        super().server_close()


class BoundedHandler(BaseHTTPRequestHandler):
    """Each request is read under the server's deadline; call `read_body` once per request."""

    server: BoundedServer

    def handle_one_request(self) -> None:
        self.server.limits.arm(self.connection)
        super().handle_one_request()

    def read_body(self, length: int) -> bytes | None:
        """The request's body (`length` bytes); None when its deadline cut it short (answer nothing)."""
        body = self.rfile.read(length) if length > 0 else b""
        if not self.server.limits.request_read(self.connection) or len(body) < length:
            self.close_connection = True
            return None
        return body
