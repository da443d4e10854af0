"""The prompt hook asking the local server: the endpoint and token, one bounded MCP request with no proxy,
which hits may be injected, scratch memory's block, and starting (or moving) the server when none answers.
Stdlib only."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from episodic.hooks.packing import MAX_CARDS
from episodic.hooks.payload import ForeignServer, HookSkip, ServerDown, deadline, setting
from episodic.plumbing import envsource
from episodic.plumbing.hook_choice import select_hits

PROTOCOL_VERSION = "2025-11-25"
Answer = TypeVar("Answer")  # what one hook's request returns (retry_started, retry_moved)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_RESPONSE_BYTES = 2_000_000


def endpoint() -> tuple[str, str]:
    broken = setting(envsource.CONFIG_ERROR)
    if broken:  # `episodic serve` refuses the same file: say which line, not "no token"
        raise HookSkip(f"fail: {broken}; fix that line (the hook and the server read their settings there)")
    url = setting("url")
    if not url:
        url = f"http://{setting('host', DEFAULT_HOST)}:{configured_port()}/mcp"
    token = setting("token")
    if not token:
        raise HookSkip("skip: missing config (no token: set EPISODIC_TOKEN or `token` in the config file)")
    return str(url), str(token)


def configured_port() -> int:
    """The port the config names; a value that is no port is the config's error, not an unreachable server."""
    raw = setting("port", DEFAULT_PORT)
    try:
        port = int(str(raw).strip())
    except ValueError:
        port = 0
    if not 1 <= port <= 65535 or isinstance(raw, bool | float):
        named = (
            "EPISODIC_PORT"
            if envsource.environ().get("EPISODIC_PORT")
            else f"`port` in {envsource.config_path()}"
        )
        raise HookSkip(f"fail: config file: {named} is {raw!r}, not a port number (1-65535); fix that line")
    return port


PROXY_VARS = ("https_proxy", "http_proxy", "all_proxy", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _dechunk(body: bytes) -> bytes:
    out: list[bytes] = []
    rest = body
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2 :]


class NoLocalPort(TimeoutError):
    """The deadline passed while every local port was taken: a timeout, not an unreachable server."""


def ends_before(left: Callable[[], float], pause: float) -> bool:
    try:
        return left() <= pause
    except TimeoutError:
        return True


CONNECT_PAUSES = (0.02, 0.05, 0.1, 0.2)  # between connects that found no free local port; then 0.2 s each


def _connect(host: str, port: int, left: Callable[[], float]) -> Any:
    """A connection within the deadline. A busy machine can run out of loopback ports for a moment
    (EADDRNOTAVAIL): that is retried while the deadline allows, not reported as an unreachable server."""
    import errno
    import socket

    attempt = 0
    while True:
        try:
            return socket.create_connection((host, port), timeout=left())
        except OSError as exc:
            if exc.errno != errno.EADDRNOTAVAIL:
                raise
            pause = CONNECT_PAUSES[min(attempt, len(CONNECT_PAUSES) - 1)]
            if ends_before(left, pause):
                raise NoLocalPort("no free local port to connect from before the deadline") from exc
            time.sleep(pause)
            attempt += 1


def _post_plain(
    host: str, port: int, path: str, payload: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes, dict[str, str]]:
    """HTTP/1.1 POST over a socket (Connection: close): the response is read to EOF; (status, body,
    headers by lower-case name)."""

    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("header values must not contain line breaks")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    chunks: list[bytes] = []
    received = 0
    ends = time.monotonic() + timeout

    def left() -> float:  # every socket step gets only what is left of the one deadline
        remaining = ends - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("hook deadline")
        return remaining

    with _connect(host, port, left) as sock:
        sock.settimeout(left())
        sock.sendall(request)
        while True:
            sock.settimeout(left())
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
            received += len(data)
            if received > MAX_RESPONSE_BYTES:
                raise HookSkip("fail: bad response (too large)")
    head, separator, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split()
    if not separator or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HookSkip("fail: bad response (not HTTP)")
    named = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    if named.get("transfer-encoding", "").lower() == "chunked":
        try:
            body = _dechunk(body)
        except ValueError as exc:
            raise HookSkip("fail: bad response (broken chunked encoding)") from exc
    return int(parts[1]), body, named


def _foreign(host: str, port: int, status: int | None, named: dict[str, str]) -> ForeignServer | None:
    """The local answer came from another program, not this home's `episodic serve` (None when it is ours)."""
    from episodic.plumbing.autostart import IDENTITY_HEADER, home_identity

    if named.get(IDENTITY_HEADER.lower()) == home_identity(envsource.home_dir()):
        return None
    what = f"HTTP {status}" if status is not None else "not HTTP"
    server = f", Server: {named['server'][:60]}" if named.get("server") else ""
    other = "another home's episodic server" if named.get(IDENTITY_HEADER.lower()) else "another program"
    return ForeignServer(f"fail: {other} answers at {host}:{port} ({what}{server}), not this home's server")


def _post(url: str, payload: bytes, headers: dict[str, str], timeout: float) -> bytes:
    """POST and return the body; HookSkip on any transport failure or non-2xx status."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    proxied = host not in LOCAL_HOSTS and any(envsource.environ().get(v) for v in PROXY_VARS)
    try:
        if proxied:  # honour the user's proxy settings (and no_proxy) the standard way
            import urllib.error
            import urllib.request

            request = urllib.request.Request(url, data=payload, method="POST", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return bytes(response.read(MAX_RESPONSE_BYTES))
            except urllib.error.HTTPError as exc:
                raise HookSkip(f"fail: server answered HTTP {exc.code}") from exc
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if parts.scheme == "http":  # the local default: a plain socket, no http.client/ssl/email imports
            try:
                status, body, named = _post_plain(host, parts.port or 80, path, payload, headers, timeout)
            except HookSkip as skip:
                if "not HTTP" in str(skip) and host in LOCAL_HOSTS:  # garbage from a local port: not ours
                    raise _foreign(host, parts.port or 80, None, {}) or skip from skip
                raise
            if not 200 <= status < 300 and host in LOCAL_HOSTS:
                foreign = _foreign(host, parts.port or 80, status, named)
                if foreign is not None:
                    raise foreign
        else:
            import http.client

            conn = http.client.HTTPSConnection(host, parts.port, timeout=timeout)
            try:
                conn.request("POST", path, body=payload, headers=headers)
                response = conn.getresponse()
                status, body = response.status, response.read(MAX_RESPONSE_BYTES)
            finally:
                conn.close()
        if not 200 <= status < 300:
            raise HookSkip(f"fail: server answered HTTP {status}")
        return body
    except HookSkip:
        raise
    except (OSError, ValueError) as exc:  # refused, DNS, TLS, timeouts (URLError is an OSError)
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, NoLocalPort):
            raise HookSkip(f"fail: timed out after {timeout:.2f} s: {reason} (a busy machine)") from exc
        if isinstance(reason, TimeoutError):
            raise HookSkip(f"fail: server timed out after {timeout:.2f} s") from exc
        if isinstance(reason, ConnectionRefusedError):
            raise ServerDown(f"fail: server unreachable ({type(reason).__name__}: {reason})") from exc
        raise HookSkip(f"fail: server unreachable ({type(reason).__name__}: {reason})") from exc
    except Exception as exc:  # http.client.HTTPException and friends: a broken answer
        raise HookSkip(f"fail: bad response ({type(exc).__name__})") from exc


def review_required() -> bool:
    return str(setting("review_required", "false")).lower() in ("true", "1", "yes", "on")


def search_arguments(
    query: str, approved_only: bool, receiving: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The search_traces arguments of the hook (the evaluation's injection view asks the same); `receiving`:
    (session id, agent) of the session the answer goes to, so the server records what it is given and never
    gives it the same card twice."""
    arguments: dict[str, Any] = {
        "query": query,
        "k": MAX_CARDS,
        "include_unverified": False,
        "include_weak": True,
    }
    if receiving is not None:
        arguments["receiving_session"], arguments["receiving_agent"] = receiving
    if approved_only:  # `review_required`: only cards a person approved are injected
        arguments["approved_only"] = True
    return arguments


def ask_server(
    url: str, token: str, query: str, timeout: float, receiving: tuple[str, str] | None = None
) -> list[dict[str, Any]]:
    """One stateless tools/call (no initialize needed); the verified results, best first."""
    approved_only = review_required()
    arguments = search_arguments(query, approved_only, receiving)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_traces", "arguments": arguments},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Authorization": f"Bearer {token}",
    }
    raw = _post(url, json.dumps(body).encode("utf-8"), headers, timeout)
    try:
        answer = json.loads(raw)
        result = answer["result"]
        if result.get("isError"):
            raise HookSkip("fail: tool error: " + str(result.get("content", [{}])[0].get("text", ""))[:200])
        results = result["structuredContent"]["results"]
        if not isinstance(results, list):
            raise TypeError("results is not a list")
    except HookSkip:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise HookSkip(f"fail: bad response ({type(exc).__name__})") from exc
    return select_hits(results, approved_only)


def scratch_block(url: str, token: str, query: str) -> str:
    """Prior similar tool outcomes (scratch memory) in what is left of the budget; '' when off or failing."""
    if str(setting("hook_scratch", "true")).lower() in ("false", "0"):
        return ""
    remaining = deadline() - time.monotonic() - 0.05
    if remaining <= 0.05:
        return ""
    try:
        from episodic.scratch.hook_block import ask_scratch

        return ask_scratch(_post, url, token, query, remaining, PROTOCOL_VERSION, review_required())
    except Exception:  # a hint, never a reason to lose the episodes
        return ""


def start_and_retry(
    url: str, token: str, query: str, down: ServerDown, receiving: tuple[str, str] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """No local server: start one in the background, ask it if it is up within the budget, else fail open.
    (the hits, what was done about the server: for the log line)."""
    return retry_started(url, down, lambda at, timeout: ask_server(at, token, query, timeout, receiving))


def retry_started(
    url: str, down: ServerDown, ask: Callable[[str, float], Answer], until: Callable[[], float] | None = None
) -> tuple[Answer, str]:
    """`start_and_retry` for any hook: `ask(url, timeout)` is its one request, `until()` its deadline."""
    from urllib.parse import urlsplit

    from episodic.plumbing import autostart

    until = until or deadline
    parts = urlsplit(url)
    autostart_off = str(setting("hook_autostart", "true")).lower() in ("false", "0")
    if parts.scheme != "http" or (parts.hostname or "") not in LOCAL_HOSTS or autostart_off:
        raise down
    pid = autostart.start_local_server(envsource.home_dir(), parts.hostname or "", parts.port or 80)
    started = f"started `episodic serve` in the background (pid {pid})" if pid else "a server is starting"
    while (remaining := until() - time.monotonic() - 0.1) > 0.3:
        time.sleep(0.2)
        with contextlib.suppress(ServerDown):
            return ask(url, remaining - 0.2), started
    raise HookSkip(f"fail: no server answered; {started}")


def move_and_retry(
    url: str, token: str, query: str, foreign: ForeignServer, receiving: tuple[str, str] | None = None
) -> tuple[list[dict[str, Any]], str, str]:
    """Another program holds the local port: move this home's server to a free port (saved in the config
    file) and start it there, unless the port is pinned (EPISODIC_PORT or `url`) or autostart is off."""
    return retry_moved(url, foreign, lambda at, timeout: ask_server(at, token, query, timeout, receiving))


def retry_moved(
    url: str,
    foreign: ForeignServer,
    ask: Callable[[str, float], Answer],
    until: Callable[[], float] | None = None,
) -> tuple[Answer, str, str]:
    """`move_and_retry` for any hook: `ask(url, timeout)` is its one request, `until()` its deadline."""
    from urllib.parse import urlsplit

    from episodic.plumbing import autostart

    until = until or deadline
    parts = urlsplit(url)
    host, config = parts.hostname or DEFAULT_HOST, envsource.config_path()
    autostart_off = str(setting("hook_autostart", "true")).lower() in ("false", "0")
    if setting("url") or envsource.environ().get("EPISODIC_PORT") or autostart_off:
        where = "EPISODIC_PORT" if envsource.environ().get("EPISODIC_PORT") else f"`port` in {config}"
        raise HookSkip(f"{foreign}; set another free port ({where}) or stop that program")
    try:
        port = autostart.move_to_free_port(envsource.home_dir(), config, host)
    except (OSError, ValueError) as exc:
        raise HookSkip(f"{foreign}; could not move to a free port: {exc}") from exc
    if port is None:
        raise HookSkip(f"{foreign}; a server is being started already (setup or another prompt)")
    moved = f"moved this home's server to port {port} (saved in {config}) and started it"
    new_url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"
    while (remaining := until() - time.monotonic() - 0.1) > 0.3:
        time.sleep(0.2)
        with contextlib.suppress(ServerDown):
            return ask(new_url, remaining - 0.2), moved, new_url
    raise HookSkip(f"{foreign}; {moved}")
