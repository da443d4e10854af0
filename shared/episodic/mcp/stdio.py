"""`episodic mcp`: MCP over stdio (newline-delimited JSON-RPC). No token: the local tenant, write allowed."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from episodic.kernel.auth import READ, WRITE, Principal
from episodic.mcp.protocol import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, McpServer, valid_id
from episodic.plumbing import bounded

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.kernel.settings import Settings


def _error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


MAX_LINE_CHARS = bounded.MAX_JSON_BYTES  # the HTTP face's body cap, per line


def _lines(stdin: TextIO) -> Iterator[str | None]:
    """Each line, or None for a line over MAX_LINE_CHARS (its rest is read and dropped, never held)."""
    while True:
        line = stdin.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
            while (rest := stdin.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                pass
            yield None
            continue
        yield line


def _answer(server: McpServer, principal: Principal, line: str | None) -> dict[str, Any] | None:
    if line is None:
        return _error(INVALID_REQUEST, f"message over {MAX_LINE_CHARS} characters")
    try:
        message = bounded.loads(line, max_bytes=MAX_LINE_CHARS * 4)
    except ValueError as exc:  # bad syntax, too deep, or an integer too long for int()
        return _error(PARSE_ERROR, f"parse error: {str(exc)[:200]}")
    if isinstance(message, list):
        return _error(INVALID_REQUEST, "JSON-RPC batches are not supported")
    try:
        return server.handle_jsonrpc(message, principal)
    except Exception as exc:  # one bad message must not end the session
        print(f"episodic mcp: internal error: {exc!r}", file=sys.stderr)
        request_id = message.get("id") if isinstance(message, dict) else None
        return _error(INTERNAL_ERROR, "internal error", request_id if valid_id(request_id) else None)


def run_stdio(server: McpServer, principal: Principal, stdin: TextIO, stdout: TextIO) -> None:
    """Answer one message per line until stdin closes; stdout carries only JSON-RPC messages."""
    for line in _lines(stdin):
        if line is not None and not line.strip():
            continue
        answer = _answer(server, principal, line)
        if answer is not None:
            stdout.write(bounded.dumps(answer) + "\n")
            stdout.flush()


def serve_stdio(settings: Settings, memory: Memory | None = None) -> None:
    from episodic.assembly import build_memory
    from episodic.mcp.tools import default_registry

    memory = memory or build_memory(settings)
    principal = Principal(settings.tenant, frozenset({READ, WRITE}))
    # the protocol owns stdout: keep stray prints (from any library) off it
    protocol_out = sys.stdout
    sys.stdout = sys.stderr
    try:
        # invalid UTF-8 on stdin becomes U+FFFD (then a parse error), never a decode crash
        raw = getattr(sys.stdin, "buffer", None)
        stdin = sys.stdin if raw is None else io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        run_stdio(McpServer(default_registry(memory)), principal, stdin, protocol_out)
    finally:
        sys.stdout = protocol_out
