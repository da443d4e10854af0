"""Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`) as trajectories.

Each line is `{timestamp, type, payload}`. The user's own words are the `event_msg` `user_message`
records; `response_item` user messages also carry the injected AGENTS.md and environment context, so
they are prompts only in rollouts that have no `user_message` at all (older versions).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

from episodic.kernel.models import SessionSource
from episodic.parse.builder import RawCall, RawEvent
from episodic.parse.formats import CODEX, COMPRESSED_SUFFIX, codex_roots
from episodic.parse.reader import iter_entries
from episodic.parse.single_file import AgentSession, SingleFileSource, exit_code_in, note_time
from episodic.parse.text import clean_user_text

_UUID_TAIL_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)
_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
# newer versions run tools from a JavaScript cell (`exec`): `await tools.exec_command({cmd: "…"})`
_CELL_CALL_RE = re.compile(
    r"tools\.(exec_command|apply_patch)\s*\(\s*(?:\{[^{}]*?\bcmd\s*:\s*)?"
    r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)",
    re.S,
)
CELL_TOOL = "exec"
# response_item user messages that are context Codex injects, not words the user typed
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
)
_REJECTED_MARKERS = ("rejected by user", "exec command rejected", "patch rejected")


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        item["text"]
        for item in content
        if isinstance(item, dict) and item.get("type") in kinds and isinstance(item.get("text"), str)
    ]


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": raw}
    return {}


def _shell_line(value: Any) -> str | None:
    """`["bash", "-lc", "pytest -q"]` → `pytest -q`; a string stays as it is."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if (
            len(value) >= 3
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            and value[1].startswith("-")
        ):
            return value[2]
        return " ".join(value)
    return None


def _cell_commands(source: str) -> str | None:
    """The shell lines a JavaScript `exec` cell runs, in order; a patch it applies reads `apply_patch`."""
    lines: list[str] = []
    for tool, literal in _CELL_CALL_RE.findall(source):
        if tool == "apply_patch":
            lines.append("apply_patch")
            continue
        body = literal[1:-1]
        with contextlib.suppress(json.JSONDecodeError):  # a JS string that is not also a JSON one
            body = json.loads(f'"{body}"') if literal[0] == '"' else body
        lines.append(body)
    return "\n".join(lines) if lines else None


def _output_text(raw: Any) -> tuple[str, bool | None]:
    """(text, success when the record says) of a function_call_output's `output`."""
    if isinstance(raw, dict):
        success = raw.get("success")
        content = raw.get("content")
        text = (
            content if isinstance(content, str) else "\n".join(_texts(content, ("input_text", "output_text")))
        )
        return text, success if isinstance(success, bool) else None
    if isinstance(raw, list):
        return "\n".join(_texts(raw, ("input_text", "output_text"))), None
    if not isinstance(raw, str):
        return "", None
    if raw.startswith("{") and '"output"' in raw[:200]:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return raw, None
        if isinstance(value, dict) and isinstance(value.get("output"), str):
            code = (
                value.get("metadata", {}).get("exit_code")
                if isinstance(value.get("metadata"), dict)
                else None
            )
            text = value["output"]
            return (f"{text}\nProcess exited with code {code}" if isinstance(code, int) else text), None
    return raw, None


class CodexSource(SingleFileSource):
    agent = CODEX

    def default_roots(self) -> list[Path]:
        if self.roots is not None:
            return self.roots
        from episodic.kernel.settings import load_settings

        return codex_roots(load_settings())

    def session_key(self, path: Path) -> str:
        stem = path.name.split(".", 1)[0]
        match = _UUID_TAIL_RE.search(stem)
        return match.group(1) if match else stem

    def parse(self, data: bytes, source: SessionSource, session: AgentSession) -> str | None:
        if source.main_path.endswith(COMPRESSED_SUFFIX):
            # the package documents no reader for .jsonl.zst and the stdlib has no zstd before 3.14
            session.skip("compressed-rollout")
            return "compressed-unsupported"
        reader = _RolloutReader(session)
        for entry in iter_entries(data, session.stats):
            reader.feed(entry)
        reader.finish()
        answered = any(e.kind in ("assistant", "tool", "thinking") for e in session.events)
        if not answered and any(e.kind == "prompt" for e in session.events):
            return "no-model-turn"  # asked, never answered: e.g. a `codex exec` whose model call failed
        return None


class _RolloutReader:
    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.typed: list[RawEvent] = []  # prompts from event_msg user_message
        self.context: list[RawEvent] = []  # prompts from response_item user messages (fallback)
        self.events: list[tuple[str, RawEvent]] = []

    def feed(self, entry: dict[str, Any]) -> None:
        s = self.session
        kind = entry.get("type")
        payload = entry.get("payload")
        ts = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if not isinstance(kind, str) or not isinstance(payload, dict):
            s.skip("<no type>")
            return
        if ts:
            note_time(s, ts)
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model and model not in s.models:
                s.models.append(model)
            if isinstance(payload.get("cwd"), str) and not s.cwd:
                s.cwd = payload["cwd"]
        elif kind == "response_item":
            self._item(payload, ts)
        elif kind == "event_msg":
            self._event(payload, ts)
        elif kind == "compacted" and isinstance(payload.get("message"), str):
            self.events.append(("any", RawEvent("compact_summary", payload["message"], timestamp=ts)))
        else:
            s.skip(kind)  # world_state, configuration_update, … from newer versions: counted, never fatal

    def _meta(self, payload: dict[str, Any]) -> None:
        s = self.session
        if isinstance(payload.get("id"), str):
            s.session_ids[payload["id"]] = s.session_ids.get(payload["id"], 0) + 1
        if isinstance(payload.get("cwd"), str) and payload["cwd"]:
            s.cwd = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str):
            s.git_branch = git["branch"]
        if isinstance(payload.get("originator"), str):
            s.entrypoint = payload["originator"]
        if isinstance(payload.get("cli_version"), str):
            s.agent_version = payload["cli_version"]

    def _item(self, payload: dict[str, Any], ts: str | None) -> None:
        s = self.session
        itype = payload.get("type")
        if itype == "message":
            role = payload.get("role")
            if role == "user":
                texts = _texts(payload.get("content"), ("input_text",))
                raw = "\n".join(texts)
                s.user_texts.append(raw)
                s.entry_types["user"] = s.entry_types.get("user", 0) + 1
                if raw.strip() and not raw.lstrip().startswith(_INJECTED_PREFIXES):
                    self._prompt(raw, ts, self.context)
            elif role == "assistant":
                s.entry_types["assistant"] = s.entry_types.get("assistant", 0) + 1
                text = "\n\n".join(_texts(payload.get("content"), ("output_text",))).strip()
                if text:
                    self.events.append(("any", RawEvent("assistant", text, timestamp=ts)))
            else:
                s.skip(f"message:{role}")  # developer / system instructions
        elif itype == "reasoning":
            summary = "\n".join(_texts(payload.get("summary"), ("summary_text",)))
            content = "\n".join(_texts(payload.get("content"), ("reasoning_text", "text")))
            thought = (content or summary).strip()
            if thought:
                s.stats.thinking_with_text += 1
                self.events.append(("any", RawEvent("thinking", thought, timestamp=ts)))
            else:
                s.stats.thinking_stripped += 1
        elif itype in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(payload, ts)
        elif itype in ("function_call_output", "custom_tool_call_output"):
            self._output(payload)
        else:
            s.skip(f"response_item:{itype}", bucket="block")

    def _event(self, payload: dict[str, Any], ts: str | None) -> None:
        etype = payload.get("type")
        if etype == "user_message" and isinstance(payload.get("message"), str):
            self.session.user_texts.append(payload["message"])
            self.session.entry_types["user"] = self.session.entry_types.get("user", 0) + 1
            self._prompt(payload["message"], ts, self.typed)
        else:  # agent_message repeats the assistant response_item; the rest is bookkeeping
            self.session.skip(f"event_msg:{etype}")

    def _prompt(self, raw: str, ts: str | None, into: list[RawEvent]) -> None:
        cleaned = clean_user_text(raw)
        self.session.stats.injected_context_stripped += cleaned.injected_removed
        if cleaned.text:
            event = RawEvent("prompt", cleaned.text, timestamp=ts)
            into.append(event)
            self.events.append(("typed" if into is self.typed else "context", event))

    def _call(self, payload: dict[str, Any], ts: str | None) -> None:
        s = self.session
        call_id = str(payload.get("call_id") or payload.get("id") or f"call-{len(s.calls)}")
        if call_id in s.calls:
            return
        name = str(payload.get("name") or payload.get("type") or "?")
        if payload.get("type") == "custom_tool_call":
            raw_input = payload.get("input")
            args: dict[str, Any] = {"input": raw_input} if isinstance(raw_input, str) else {}
        elif payload.get("type") == "local_shell_call":
            action = payload.get("action")
            args = dict(action) if isinstance(action, dict) else {}
        else:
            args = _arguments(payload.get("arguments"))
        call = RawCall(id=call_id, name=name, input=args, timestamp=ts, agent_id=None)
        command = _shell_line(args.get("cmd") if "cmd" in args else args.get("command"))
        if name == CELL_TOOL and isinstance(args.get("input"), str):
            command = _cell_commands(args["input"])
        if command is not None and name not in ("apply_patch",):
            call.command = command
        patch = args.get("input") if name in ("apply_patch", CELL_TOOL) else None
        if command and command.lstrip().startswith("apply_patch"):
            patch = command
        if isinstance(patch, str):
            files = _PATCH_FILE_RE.findall(patch)
            call.file_path = files[0].strip() if files else None
        s.calls[call_id] = call
        self.events.append(("any", RawEvent("tool", call=call, timestamp=ts)))

    def _output(self, payload: dict[str, Any]) -> None:
        call = self.session.calls.get(str(payload.get("call_id")))
        if call is None or call.answered:
            self.session.skip("tool_output:unmatched", bucket="block")
            return
        call.answered = True
        text, success = _output_text(payload.get("output"))
        call.output = text
        call.exit_code = exit_code_in(text)
        lowered = text[:300].lower()
        call.rejected = any(marker in lowered for marker in _REJECTED_MARKERS)
        call.interrupted = lowered.startswith("aborted")
        call.is_error = success is False or (call.exit_code not in (None, 0))

    def finish(self) -> None:
        """Order the events; prompts come from user_message records when the rollout has any."""
        keep = "typed" if self.typed else "context"
        self.session.events = [e for origin, e in self.events if origin in ("any", keep)]
