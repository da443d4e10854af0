"""`episodic mcp`: MCP over stdio (newline-delimited JSON-RPC). No token: the local tenant, write allowed."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from episodic.auth import READ, WRITE, Principal
from episodic.mcp.protocol import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, McpServer

if TYPE_CHECKING:
    from episodic.service import Memory
    from episodic.settings import Settings


def _error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def run_stdio(server: McpServer, principal: Principal, stdin: TextIO, stdout: TextIO) -> None:
    """Answer one message per line until stdin closes; stdout carries only JSON-RPC messages."""
    for line in stdin:
        if not line.strip():
            continue
        answer: dict[str, Any] | None
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            answer = _error(PARSE_ERROR, f"parse error: {exc}")
        else:
            if isinstance(message, list):
                answer = _error(INVALID_REQUEST, "JSON-RPC batches are not supported")
            else:
                try:
                    answer = server.handle_jsonrpc(message, principal)
                except Exception as exc:  # one bad message must not end the session
                    print(f"episodic mcp: internal error: {exc!r}", file=sys.stderr)
                    request_id = message.get("id") if isinstance(message, dict) else None
                    answer = _error(INTERNAL_ERROR, "internal error", request_id)
        if answer is not None:
            stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
            stdout.flush()


def serve_stdio(settings: Settings, memory: Memory | None = None) -> None:
    from episodic.backends import build_memory
    from episodic.mcp.tools import default_registry

    memory = memory or build_memory(settings)
    principal = Principal(settings.tenant, frozenset({READ, WRITE}))
    # the protocol owns stdout: keep stray prints (from any library) off it
    protocol_out = sys.stdout
    sys.stdout = sys.stderr
    try:
        run_stdio(McpServer(default_registry(memory)), principal, sys.stdin, protocol_out)
    finally:
        sys.stdout = protocol_out
