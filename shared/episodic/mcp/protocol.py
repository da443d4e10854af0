"""MCP over stateless Streamable HTTP, JSON responses only, free of sockets and threads.

`McpEndpoint.handle(HttpRequest) -> HttpResponse` is the whole HTTP face: the local server and the
AWS Lambda both call it unchanged. `handle_jsonrpc` is the message layer the stdio transport reuses.
Rules: ../shared/reference/mcp-and-hooks.md §3-§7 (auth first, 202 for notifications, 405 for GET/DELETE,
no batches, no session ids, no SSE, a 400 for the 2026-07-28 discover probe so clients fall back).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from episodic import __version__ as _package_version
from episodic.kernel.auth import READ, WRITE, Authenticator, Principal
from episodic.kernel.errors import AuthError, ScopeError
from episodic.kernel.models import LOCAL_TENANT
from episodic.mcp.registry import SERVER_INSTRUCTIONS, ToolRegistry, UnknownToolError
from episodic.plumbing import bounded

log = logging.getLogger(__name__)

SUPPORTED_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
DEFAULT_HEADER_VERSION = "2025-03-26"  # what a request without MCP-Protocol-Version is assumed to speak
REALM = "episodic"
MCP_PATH = "/mcp"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNAUTHORIZED = -32001  # implementation-defined server error range
FORBIDDEN = -32003

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
SERVER_INFO = {
    "name": "episodic",
    "title": "Episodic memory of past coding sessions",
    "version": _package_version,
}


class Headers(MutableMapping[str, str]):
    """Case-insensitive HTTP headers (one value per name; the last one wins)."""

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            self[key] = value

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def __setitem__(self, key: str, value: str) -> None:
        self._items[key.lower()] = (key, value)

    def __delitem__(self, key: str) -> None:
        del self._items[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=Headers)  # any mapping; made case-insensitive
    body: bytes = b""

    def __post_init__(self) -> None:
        if not isinstance(self.headers, Headers):
            self.headers = Headers(self.headers)


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _error(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _json_response(status: int, payload: Any, extra: Mapping[str, str] | None = None) -> HttpResponse:
    headers = {"Content-Type": "application/json", "Cache-Control": "no-store"}
    headers.update(extra or {})
    return HttpResponse(status, headers, bounded.dumps(payload).encode("utf-8"))


def valid_id(value: Any) -> bool:
    """A string or integer id (a string with a lone surrogate could not be echoed as UTF-8)."""
    if isinstance(value, str):
        return bounded.lone_surrogate_path(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


_valid_id = valid_id


class JsonRpcFault(Exception):
    """A JSON-RPC error answer (with the HTTP status it deserves on the HTTP face)."""

    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


class McpServer:
    """The message layer: initialize, ping, tools/list, tools/call, over a tool registry."""

    def __init__(self, tools: ToolRegistry, instructions: str = SERVER_INSTRUCTIONS) -> None:
        self.tools = tools
        self.instructions = instructions

    def handle_jsonrpc(self, message: Any, principal: Principal) -> dict[str, Any] | None:
        """Answer one JSON-RPC message; None for notifications and responses (nothing to send)."""
        if not isinstance(message, dict):
            return _error(
                None, INVALID_REQUEST, "a JSON-RPC message must be an object (batches are not supported)"
            )
        if "method" not in message:
            return None  # a response to a server request we never sent: accept and ignore
        msg_id = message.get("id")
        is_request = "id" in message
        if message.get("jsonrpc") != "2.0" or not isinstance(message["method"], str):
            return _error(
                msg_id if _valid_id(msg_id) else None, INVALID_REQUEST, "not a JSON-RPC 2.0 message"
            )
        if bounded.lone_surrogate_path(message["method"]) is not None:
            return _error(
                msg_id if _valid_id(msg_id) else None,
                INVALID_REQUEST,
                "the method name is not valid Unicode (a lone surrogate)",
            )
        if not is_request:
            return None  # notifications (initialized, cancelled, …) need no answer
        if not _valid_id(msg_id):
            return _error(None, INVALID_REQUEST, "the id must be a string or an integer")
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, "params must be an object")
        bad_text = bounded.lone_surrogate_path(params, "params")
        if bad_text is not None:  # e.g. undecodable bytes the client escaped: refuse, never guess
            return _error(msg_id, INVALID_PARAMS, f"{bad_text} is not valid Unicode (a lone surrogate)")
        try:
            result = self._dispatch(message["method"], params, principal)
        except JsonRpcFault as fault:
            return _error(msg_id, fault.code, fault.message, fault.data)
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _dispatch(self, method: str, params: dict[str, Any], principal: Principal) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
            return {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
                "instructions": self.instructions,
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools.list_for(principal)}
        if method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments", {})
            if not isinstance(name, str) or not name:
                raise JsonRpcFault(
                    INVALID_PARAMS, "tools/call needs params.name (a tool name from tools/list)"
                )
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise JsonRpcFault(INVALID_PARAMS, "tools/call params.arguments must be an object")
            try:
                return self.tools.call(name, arguments, principal)
            except UnknownToolError as exc:
                raise JsonRpcFault(INVALID_PARAMS, str(exc)) from exc
            except ScopeError as exc:
                raise JsonRpcFault(FORBIDDEN, str(exc), status=403) from exc
        raise JsonRpcFault(METHOD_NOT_FOUND, f"method not found: {method}")


# an Origin is scheme://host[:port] and nothing else; `\\`, `@`, paths or userinfo are refused, since
# browsers and urlsplit disagree on where the host of `http://evil.com\\@localhost` is
_ORIGIN_RE = re.compile(r"(https?)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?/?")


def _host_name(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host.lower()


def origin_allowed(origin: str | None, allowed: Iterable[str]) -> bool:
    """No Origin (non-browser clients) or a localhost origin or a configured one (DNS-rebinding guard)."""
    if origin is None:
        return True
    origin = origin.strip()
    if origin.rstrip("/") in {a.rstrip("/") for a in allowed}:
        return True
    match = _ORIGIN_RE.fullmatch(origin)
    return match is not None and _host_name(match.group(2)) in LOCAL_HOSTS


_HOST_RE = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")


def host_allowed(host: str | None, allowed: Iterable[str]) -> bool:
    """The Host header names one of the allowed host names (DNS rebinding sends the attacker's name)."""
    match = _HOST_RE.fullmatch((host or "").strip())
    return match is not None and _host_name(match.group(1)) in {h.lower() for h in allowed}


def _bearer(headers: Mapping[str, str]) -> tuple[str | None, bool]:
    """(token, malformed): the token from `Authorization: Bearer …`."""
    raw = headers.get("authorization")
    if raw is None:
        return None, False
    scheme, _, token = raw.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None, True
    return token, False


class McpEndpoint:
    """The HTTP face of the MCP server (stateless; one POST, one JSON answer)."""

    def __init__(
        self,
        tools: ToolRegistry,
        authenticator: Authenticator | None = None,
        allowed_origins: Iterable[str] = (),
        require_auth: bool = True,
        path: str | None = MCP_PATH,
        local_principal: Principal | None = None,
        allowed_hosts: Iterable[str] | None = None,
    ) -> None:
        if require_auth and authenticator is None:
            raise ValueError("require_auth needs an authenticator")
        self.server = McpServer(tools)
        self.authenticator = authenticator
        self.allowed_origins = tuple(allowed_origins)
        self.require_auth = require_auth
        self.path = path
        self.local_principal = local_principal or Principal(LOCAL_TENANT, frozenset({READ, WRITE}))
        # None: any Host (behind API Gateway); the local server passes its loopback names
        self.allowed_hosts = None if allowed_hosts is None else frozenset(allowed_hosts)

    def handle_jsonrpc(self, message: Any, principal: Principal) -> dict[str, Any] | None:
        return self.server.handle_jsonrpc(message, principal)

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """The request's credential is valid, or none is needed (the server keeps such a connection first)."""
        if self.require_auth and self.authenticator is not None and not _bearer(Headers(headers))[0]:
            return False  # no token: no need to ask the token store
        try:
            principal = self._authenticate(HttpRequest("POST", self.path or "/", headers))
        except Exception:  # a store that cannot say: not vouched for
            log.exception("authenticating a request head failed")
            return False
        return not isinstance(principal, HttpResponse)

    def handle(self, req: HttpRequest) -> HttpResponse:
        try:
            return self._handle(req)
        except Exception:  # never a 500 with a stack trace: one JSON-RPC internal error
            log.exception("MCP request failed")
            return _json_response(500, _error(None, INTERNAL_ERROR, "internal error"))

    def _unauthorized(self, message: str, status: int = 401) -> HttpResponse:
        # static bearer only: no resource_metadata, so clients never start an OAuth flow
        challenge = f'Bearer realm="{REALM}"' + (', error="invalid_request"' if status == 400 else "")
        return _json_response(status, _error(None, UNAUTHORIZED, message), {"WWW-Authenticate": challenge})

    def _authenticate(self, req: HttpRequest) -> Principal | HttpResponse:
        token, malformed = _bearer(req.headers)
        if malformed:
            return self._unauthorized(
                "malformed Authorization header: send 'Authorization: Bearer <token>'", 400
            )
        if token is None and not self.require_auth:
            return self.local_principal
        if self.authenticator is None:
            return self.local_principal
        try:
            return self.authenticator.authenticate(token)
        except AuthError as exc:
            hint = "create one with `episodic token add --tenant NAME`" if token is None else str(exc)
            return self._unauthorized(f"missing or invalid bearer token ({hint})")

    def _handle(self, req: HttpRequest) -> HttpResponse:
        path = urlsplit(req.path).path
        if path.startswith("/.well-known/"):
            return _json_response(404, {"error": "not found"})  # never advertise OAuth discovery
        if self.path is not None and path.rstrip("/") != self.path.rstrip("/"):
            return _json_response(404, {"error": f"not found; the MCP endpoint is {self.path}"})
        if not origin_allowed(req.headers.get("origin"), self.allowed_origins):
            return _json_response(403, _error(None, FORBIDDEN, "Origin not allowed"))
        if self.allowed_hosts is not None and not host_allowed(req.headers.get("host"), self.allowed_hosts):
            return _json_response(403, _error(None, FORBIDDEN, "Host not allowed (DNS rebinding guard)"))
        principal = self._authenticate(req)
        if isinstance(principal, HttpResponse):
            return principal
        method = req.method.upper()
        if method != "POST":
            message = "this stateless server only accepts POST (no SSE stream, no sessions)"
            return _json_response(405, _error(None, INVALID_REQUEST, message), {"Allow": "POST"})
        content_type = req.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if content_type != "application/json":
            return _json_response(415, _error(None, INVALID_REQUEST, "Content-Type must be application/json"))
        try:
            message = bounded.loads(req.body.decode("utf-8"), max_bytes=max(len(req.body), 1))
        except ValueError as exc:  # bad UTF-8 or syntax, too deep, or an integer too long for int()
            return _json_response(400, _error(None, PARSE_ERROR, f"parse error: {str(exc)[:200]}"))
        if isinstance(message, list):
            return _json_response(400, _error(None, INVALID_REQUEST, "JSON-RPC batches are not supported"))
        msg_id = message.get("id") if isinstance(message, dict) else None
        msg_id = msg_id if _valid_id(msg_id) else None
        header_version = req.headers.get("mcp-protocol-version")
        if header_version is not None and header_version.strip() not in SUPPORTED_VERSIONS:
            # also the answer to the 2026-07-28 server/discover probe: a plain error, so clients fall back
            data = {"supported": list(SUPPORTED_VERSIONS), "requested": header_version}
            return _json_response(400, _error(msg_id, INVALID_PARAMS, "Unsupported protocol version", data))
        answer = self.server.handle_jsonrpc(message, principal)
        if answer is None:
            return HttpResponse(202, {}, b"")
        if "error" in answer:
            code = answer["error"]["code"]
            status = {INVALID_REQUEST: 400, PARSE_ERROR: 400, FORBIDDEN: 403}.get(code, 200)
            return _json_response(status, answer)
        return _json_response(200, answer)
