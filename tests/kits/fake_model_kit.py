"""A loopback stand-in for the Anthropic Messages API that drives the real Claude Code CLI offline: the first
turn asks for one Bash command, every later turn ends the session with a short text. Only the documented
streaming shape (message_start … message_stop, server-sent events) and the JSON one are spoken."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _has_tool_result(request: dict[str, Any]) -> bool:
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
    return False


def _answer(request: dict[str, Any], command: str) -> tuple[list[dict[str, Any]], str]:
    """(content blocks, stop reason): a Bash call until a tool result came back, then a text."""
    tools = {t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)}
    if "Bash" in tools and not _has_tool_result(request):
        block = {"type": "tool_use", "id": "toolu_fake_0001", "name": "Bash", "input": {"command": command}}
        return [block], "tool_use"
    return [{"type": "text", "text": "Done."}], "end_turn"


def _events(blocks: list[dict[str, Any]], stop: str, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []}
    yield (
        "message_start",
        {"type": "message_start", "message": {**message, "stop_reason": None, "usage": usage}},
    )
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
    )
    yield "message_stop", {"type": "message_stop"}


class QuietJSONHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers JSON (the fakes of the model APIs share it)."""

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def fake_model(command: str) -> Iterator[str]:
    """Serve the fake Messages API on a free loopback port; yields its base URL (ANTHROPIC_BASE_URL)."""

    class Handler(QuietJSONHandler):
        def do_GET(self) -> None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._json(200, {"input_tokens": 10})
                return
            if not path.endswith("/v1/messages"):
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                return
            model = str(request.get("model") or "claude-fake")
            blocks, stop = _answer(request, command)
            if not request.get("stream"):
                usage = {"input_tokens": 10, "output_tokens": 5}
                body = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model}
                self._json(200, {**body, "content": blocks, "stop_reason": stop, "usage": usage})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for name, data in _events(blocks, stop, model):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
