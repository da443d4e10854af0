"""Loopback stand-ins for the model APIs of the real Codex CLI (OpenAI Responses API, streamed) and Gemini CLI
(Gemini API `streamGenerateContent`, server-sent events) that drive each CLI offline: the first turn asks for
one shell command, every later turn ends the session with a short text. Every request is kept, so a test can
read what reached the model after the tool ran. Only the documented shapes are spoken; anything else is 404."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from kits.fake_model_kit import QuietJSONHandler

CODEX_SHELL_TOOL = "exec_command"  # Codex 0.171's shell tool (unified exec): {"cmd": "..."}
GEMINI_SHELL_TOOL = "run_shell_command"  # Gemini CLI 0.61's shell tool: {"command": "..."}


@dataclass
class FakeModel:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)  # (path, body) of every POST, in order


def _codex_has_tool_output(request: dict[str, Any]) -> bool:
    return any(
        isinstance(item, dict) and item.get("type") == "function_call_output"
        for item in request.get("input") or []
    )


def _codex_events(request: dict[str, Any], command: str) -> Iterator[dict[str, Any]]:
    """The Responses API stream: response.created, one output item, response.completed."""
    tools = {t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)}
    if CODEX_SHELL_TOOL in tools and not _codex_has_tool_output(request):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_fake_0001",
            "call_id": "call_fake_0001",
            "name": CODEX_SHELL_TOOL,
            "arguments": json.dumps({"cmd": command, "login": False}),
        }
    else:
        item = {
            "type": "message",
            "id": "msg_fake_0002",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    yield {"type": "response.created", "response": {"id": "resp_fake"}}
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    yield {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}}


def _gemini_has_tool_output(request: dict[str, Any]) -> bool:
    for content in request.get("contents") or []:
        for part in content.get("parts") or [] if isinstance(content, dict) else []:
            if isinstance(part, dict) and "functionResponse" in part:
                return True
    return False


def _gemini_tool_names(request: dict[str, Any]) -> set[str]:
    names = set()
    for tool in request.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or [] if isinstance(tool, dict) else []:
            names.add(declaration.get("name"))
    return names


def _gemini_answer(request: dict[str, Any], command: str) -> dict[str, Any]:
    """One GenerateContentResponse: a run_shell_command call until a function response came back, then text."""
    if GEMINI_SHELL_TOOL in _gemini_tool_names(request) and not _gemini_has_tool_output(request):
        part: dict[str, Any] = {"functionCall": {"name": GEMINI_SHELL_TOOL, "args": {"command": command}}}
    else:
        part = {"text": "Done."}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }


@contextmanager
def fake_agent_model(command: str) -> Iterator[FakeModel]:
    """Serve both APIs on one free loopback port: `/v1/responses` (Codex) and
    `/v1beta/models/<model>:streamGenerateContent|generateContent|countTokens` (Gemini)."""
    state = FakeModel(base_url="")
    lock = threading.Lock()

    class Handler(QuietJSONHandler):
        def _stream(self, events: Iterator[str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for event in events:
                self.wfile.write(event.encode())
            self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:
            if self.path.split("?")[0].endswith("/models"):
                self._json(200, {"object": "list", "data": [], "models": []})
                return
            self._json(404, {"error": {"code": 404, "message": f"no {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._json(400, {"error": {"code": 400, "message": "not JSON"}})
                return
            path = self.path.split("?")[0]
            with lock:
                state.requests.append({"path": path, "body": request})
            if path.endswith("/responses"):
                events = _codex_events(request, command)
                self._stream(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            elif path.endswith(":streamGenerateContent"):
                self._stream(iter([f"data: {json.dumps(_gemini_answer(request, command))}\r\n\r\n"]))
            elif path.endswith(":generateContent"):
                self._json(200, _gemini_answer(request, command))
            elif path.endswith(":countTokens"):
                self._json(200, {"totalTokens": 10})
            else:
                self._json(404, {"error": {"code": 404, "message": f"no {path}"}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
