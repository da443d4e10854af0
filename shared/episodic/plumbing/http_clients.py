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

Authenticated requests first: a connection is *untrusted* until a request on it carries a valid
credential (the server's handler says so, `settle`), and untrusted ones hold at most `max_untrusted`
slots across every address together (`MAX_UNTRUSTED`). A full server, an address at its share, or the
untrusted slots all taken: the connection to close is chosen untrusted first (one already refused,
then the one waiting longest), trusted idle keep-alives next; a waiting one whose request already sits
in its socket with a valid credential (`vouch`, a peek: its thread may not have run yet, as on a busy
machine) is never chosen. A handler answers an untrusted request, then closes (`close_connection`):
pipelined requests without a token are never queued behind it.

Stdlib only, like the servers.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REQUEST_DEADLINE_SECONDS = 10.0  # request line + headers + body, from when the connection waits for it
MAX_CONNECTIONS = 64  # one thread each
MAX_CONNECTIONS_PER_CLIENT = 16  # per source address but 127.0.0.1 / ::1 (every local client's)
MAX_UNTRUSTED = 16  # connections that have not sent a valid credential, over every address together
PEEK_BYTES = 16 * 1024  # the head of a request a vouch reads (the servers' header limits are 64 KB)
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
    trusted: bool = False  # a request on it carried a valid credential
    refused: bool = False  # its request carried none: answered, then closed

    def evictable(self) -> bool:
        return not self.expired and (self.waiting_since is not None or self.refused)

    def rank(self) -> tuple[int, float]:
        """Who goes first: refused, then untrusted by longest wait, then trusted idle by longest wait."""
        return (0 if self.refused else 1 if not self.trusted else 2, self.waiting_since or 0.0)


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
        max_untrusted: int = MAX_UNTRUSTED,
        vouch: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.deadline = deadline
        self.max_connections = max_connections
        self.per_client = per_client
        self.max_untrusted = min(max_untrusted, max_connections)
        self.vouch = vouch  # the head of a request (up to its blank line): does it carry a valid credential?
        self._clients: dict[socket.socket, _Client] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._watchdog = threading.Thread(target=self._watch, name="http-deadlines", daemon=True)
        self._watchdog.start()

    # ------------------------------------------------------------------ admission

    def admit(self, sock: socket.socket, address: str) -> bool:
        """Take the connection, closing another if need be (module docstring); False: refuse it."""
        with self._cond:
            mine = [c for c in self._clients.values() if c.address == address]
            at_share = not _shared_by_local_clients(address) and len(mine) >= self.per_client
            if at_share and not self._evict(mine):
                return False
            untrusted = [c for c in self._clients.values() if not c.trusted]
            if len(untrusted) >= self.max_untrusted and not self._evict(untrusted):
                return False
            if len(self._clients) >= self.max_connections and not self._evict(self._clients.values()):
                return False
            # a new connection waits for its request from now on: its deadline runs
            self._clients[sock] = _Client(sock, address, waiting_since=time.monotonic())
            self._cond.notify()
            return True

    def _evict(self, candidates: Any) -> bool:
        for client in sorted((c for c in candidates if c.evictable()), key=_Client.rank):
            if not client.trusted and not client.refused and self._vouched(client):
                client.trusted = True  # its request is in, with a valid credential: it stays
                continue
            self._expire(client)
            return True
        return False

    def _vouched(self, client: _Client) -> bool:
        """A peek at what the connection has sent and its handler not read yet: a request head whose
        credential `vouch` accepts. Never waits: the server's own socket object has a timeout (it would
        wait for data with this lock held), so the peek goes through a duplicate without one."""
        if self.vouch is None or not hasattr(socket, "MSG_DONTWAIT"):
            return False
        try:
            with socket.socket(fileno=os.dup(client.sock.fileno())) as twin:
                head = twin.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:  # nothing there yet (BlockingIOError), or the client is gone
            return False
        end = head.find(b"\r\n\r\n")
        if end < 0:
            return False
        try:
            return self.vouch(head[:end])
        except Exception:  # a hostile head must not break admission: not vouched for
            return False

    def settle(self, sock: socket.socket, trusted: bool) -> None:
        """The handler's verdict on the request just read: it carried a valid credential, or none."""
        with self._cond:
            client = self._clients.get(sock)
            if client is not None:
                client.trusted = client.trusted or trusted
                client.refused = not trusted

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
                if client.waiting_since is None:  # a new connection's clock runs from its admission
                    client.waiting_since = time.monotonic()
                client.refused = False
                self._cond.notify()

    def request_read(self, sock: socket.socket) -> bool:
        """The whole request is in: stop its clock. False when its deadline passed (answer nothing)."""
        with self._cond:
            client = self._clients.get(sock)
            if client is None or client.expired:
                return False
            client.waiting_since = None
            return True

    def held(self, untrusted: bool = False) -> list[str]:
        """The address of every connection held, or of every untrusted one (for tests and logs)."""
        with self._cond:
            return [c.address for c in self._clients.values() if not (untrusted and c.trusted)]

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


STOP_POLL_SECONDS = (
    0.02  # a server serving in a thread checks for shutdown() this often (the default is 0.5 s)
)


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


def request_head(head: bytes) -> dict[str, str]:
    """The header fields of a request head (up to its blank line), names lower-cased; the last one wins."""
    fields: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, colon, value = line.partition(":")
        if colon:
            fields[name.strip().lower()] = value.strip()
    return fields


class BoundedHandler(BaseHTTPRequestHandler):
    """Each request is read under the server's deadline; call `read_body` once per request, and `settle`
    once it is known whether the request carried a valid credential."""

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

    def settle(self, trusted: bool) -> None:
        """A request without a valid credential is answered, then its connection closed (nothing it
        pipelined is read); a trusted connection keeps its slot while it is served."""
        self.server.limits.settle(self.connection, trusted)
        if not trusted:
            self.close_connection = True
