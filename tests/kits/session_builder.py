"""Small Claude Code transcripts written line by line, for tests that need names, tool uses or web searches
the demo corpus does not have (the demo format: one JSON object per line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class SessionWriter:
    """Appends entries of one session; `write` puts them in `folder/<session_id>.jsonl`."""

    def __init__(self, session_id: str, day: str, cwd: str = "/home/dev/webshop") -> None:
        self.session_id, self.day, self.cwd = session_id, day, cwd
        self.lines: list[dict[str, Any]] = []
        self._tool = 0

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(self.lines)
        self.lines.append(
            {
                "type": kind,
                "uuid": f"{self.session_id}-{n}",
                "parentUuid": f"{self.session_id}-{n - 1}" if n else None,
                "sessionId": self.session_id,
                "timestamp": f"{self.day}T09:{n // 60:02d}:{n % 60:02d}Z",
                "version": "2.1.39",
                "cwd": self.cwd,
                "gitBranch": "main",
                "isSidechain": False,
                "userType": "external",
                "message": message,
                **extra,
            }
        )

    def prompt(self, text: str) -> SessionWriter:
        self._entry("user", {"role": "user", "content": text})
        return self

    def reply(self, text: str) -> SessionWriter:
        self._entry("assistant", _assistant([{"type": "text", "text": text}]))
        return self

    def tool(
        self, name: str, tool_input: dict[str, Any], output: str, *, error: bool = False
    ) -> SessionWriter:
        self._tool += 1
        tool_id = f"toolu_{self.session_id[:8]}{self._tool:04d}"
        self._entry(
            "assistant", _assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}])
        )
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": error}
        self._entry("user", {"role": "user", "content": [result]})
        return self

    def title(self, text: str) -> SessionWriter:
        self.lines.append({"type": "custom-title", "customTitle": text, "sessionId": self.session_id})
        return self

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }
