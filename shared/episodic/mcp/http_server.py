"""`episodic serve`: a small threaded HTTP server on localhost delegating every request to McpEndpoint."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from episodic.kernel.settings import Settings
from episodic.mcp.protocol import LOCAL_HOSTS, Headers, HttpRequest, McpEndpoint
from episodic.plumbing import envsource
from episodic.plumbing.autostart import IDENTITY_HEADER, home_identity
from episodic.plumbing.http_clients import (
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CLIENT,
    REQUEST_DEADLINE_SECONDS,
    STOP_POLL_SECONDS,
    BoundedHandler,
    BoundedServer,
    ClientLimits,
    request_head,
)

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1_000_000  # a JSON-RPC request to this server is small; refuse anything absurd
READ_TIMEOUT_SECONDS = 10.0  # a client silent this long mid-request (or idle on keep-alive) is dropped


class _Handler(BoundedHandler):
    server_version = "episodic"
    sys_version = ""
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK client reuses one connection
    endpoint: McpEndpoint  # set on the subclass made per server
    identity: str = ""  # this home's autostart.home_identity, sent with every answer

    def send_response(self, code: int, message: str | None = None) -> None:
        super().send_response(code, message)
        if self.identity:  # the hook and setup tell this home's server from another program on the port
            self.send_header(IDENTITY_HEADER, self.identity)

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.send_response(413 if length > 0 else 400)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return
        body = self.read_body(length)
        if body is None:  # the whole-request deadline passed: the connection is already closed
            return
        request = HttpRequest(self.command, self.path, Headers(self.headers.items()), body)
        trusted = self.endpoint.authorized(request.headers)
        self.settle(trusted)  # without a valid token: this answer, then the connection closes
        response = self.endpoint.handle(request)
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if not trusted:
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if response.body and self.command != "HEAD":
            self.wfile.write(response.body)

    do_POST = do_GET = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class McpHttpServer(BoundedServer):
    def handle_error(self, request: object, client_address: object) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # the client gave up (the hook's budget ran out) or its deadline passed
            log.debug("client %s went away: %s", client_address, exc)
            return
        log.exception("error while serving %s", client_address)

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        host_text = f"[{host}]" if ":" in host else host
        return f"http://{host_text}:{port}/mcp"


def make_server(
    endpoint: McpEndpoint,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    read_timeout: float = READ_TIMEOUT_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
    request_deadline: float = REQUEST_DEADLINE_SECONDS,
    max_connections_per_client: int = MAX_CONNECTIONS_PER_CLIENT,
    identity: str | None = None,
) -> McpHttpServer:
    """Bind (port 0 = an ephemeral port) without serving yet; clients bounded as `http_clients` says."""
    # StreamRequestHandler applies `timeout` to every read of the connection's socket
    identity = home_identity(envsource.home_dir()) if identity is None else identity
    handler = type(
        "McpHandler", (_Handler,), {"endpoint": endpoint, "timeout": read_timeout, "identity": identity}
    )
    if endpoint.allowed_hosts is None and host in LOCAL_HOSTS:
        endpoint.allowed_hosts = LOCAL_HOSTS  # DNS rebinding: a loopback server answers loopback names only
    limits = ClientLimits(
        request_deadline,
        max_connections,
        max_connections_per_client,
        vouch=lambda head: endpoint.authorized(Headers(request_head(head))),
    )
    return McpHttpServer((host, port), handler, limits=limits)


class BackgroundServer:
    """Serve in a thread (tests, benchmarks): `with BackgroundServer(endpoint) as srv: srv.url`."""

    def __init__(
        self, endpoint: McpEndpoint, host: str = "127.0.0.1", port: int = 0, **limits: float
    ) -> None:
        self.httpd = make_server(endpoint, host, port, **limits)  # type: ignore[arg-type]
        # shutdown() waits for the serve loop's next poll: a short poll ends a test's server at once, not in 0.5 s
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(STOP_POLL_SECONDS,), name="mcp-http", daemon=True
        )

    @property
    def url(self) -> str:
        return self.httpd.url

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def local_memory(settings: Settings) -> Memory:
    """The server's one Memory: concurrent searches share one embedding pass (same vectors; no wait when alone)."""
    from dataclasses import replace

    from episodic.assembly import build_memory
    from episodic.embed.coalesce import CoalescingEmbedder

    memory = build_memory(settings)
    return replace(memory, embedder=CoalescingEmbedder(memory.embedder))


def warm_second_stage(memory: Memory) -> None:
    """The judge loads beside the first requests, not inside a search's deadline; not a daemon thread, so an exit
    waits for a load under way (onnxruntime aborts the process when torn down mid-load)."""
    if memory.reranker is not None:
        import threading

        threading.Thread(target=memory.reranker.warm, name="warm-reranker").start()


def build_endpoint(settings: Settings, memory: Memory | None = None) -> McpEndpoint:
    """The local endpoint: tools over one Memory, tokens from the home folder, origins from settings."""
    from episodic.kernel.auth import LocalTokenStore
    from episodic.mcp.tools import default_registry

    if memory is None:
        memory = local_memory(settings)
    return McpEndpoint(
        default_registry(memory),
        authenticator=LocalTokenStore(settings.tokens_path),
        allowed_origins=settings.allowed_origins,
        allowed_hosts=LOCAL_HOSTS | set(settings.allowed_hosts) if settings.allowed_hosts else None,
    )


def serve(
    settings: Settings,
    host: str | None = None,
    port: int | None = None,
    on_ready: Callable[[McpHttpServer], None] | None = None,
) -> None:
    """Serve until interrupted (Ctrl-C); the memory is built once, before the first request."""
    memory = local_memory(settings)
    endpoint = build_endpoint(settings, memory)
    httpd = make_server(
        endpoint,
        host or settings.host,
        settings.port if port is None else port,
        read_timeout=settings.serve_read_timeout_seconds,
        max_connections=settings.serve_max_connections,
        request_deadline=settings.serve_request_deadline_seconds,
        max_connections_per_client=settings.serve_max_connections_per_client,
        identity=home_identity(envsource.home_dir()),  # as the hook computes it: the config's home
    )
    warm_second_stage(memory)  # once the port is this server's: a refused start loads nothing
    if on_ready:
        on_ready(httpd)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
