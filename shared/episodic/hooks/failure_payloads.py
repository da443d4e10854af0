"""The failed shell command in each agent CLI's after-a-tool hook payload (stdlib only: the hook side).

Each shape was read off the real CLI driven offline (tests/functional/test_failure_hook_agents_cli.py):
- Claude Code 2.1.x `PostToolUseFailure` (failures only): `tool_input.command`, `error` ("Exit code N\\n…").
- Codex CLI 0.171 `PostToolUse` (every Bash call, success too): `tool_input.command`, `tool_response` (the
  output text, no exit code); the exit code is in the session's rollout (`transcript_path`), whose
  `item_completed` event for `tool_use_id` is written before the hook runs.
- Gemini CLI 0.61 `AfterTool` (every tool): `tool_name` `run_shell_command`, `tool_input.command`,
  `tool_response.llmContent` ("Output: …\\nExit Code: N\\n…", wrapped in `<untrusted_context>`), `error` only
  when the shell could not start.
All three take the same answer: `{"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": …}}`
(Codex adds it as a developer message before the tool output; Gemini appends it to the tool result inside
`<hook_context>`; Claude Code as a system reminder).
"""

from __future__ import annotations

import json
import re
from typing import Any

from episodic.plumbing import bounded

CLAUDE_EVENT, CODEX_EVENT, GEMINI_EVENT = "PostToolUseFailure", "PostToolUse", "AfterTool"
EVENTS = (CLAUDE_EVENT, CODEX_EVENT, GEMINI_EVENT)
SHELL_TOOLS = frozenset({"Bash", "run_shell_command", "shell", "exec_command", "local_shell"})
MAX_COMMAND_CHARS = 4000
MAX_ERROR_CHARS = 20_000
ROLLOUT_TAIL_BYTES = 1_000_000  # the call just ended: its record is near the end of the rollout
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_GEMINI_TRAILERS = re.compile(r"^(?:Exit Code|Signal|Background PIDs|Process Group PGID): .*$", re.M)
_WRAPPER = re.compile(r"</?untrusted_context>")


class NotAFailure(Exception):
    """The payload is no failed shell command (the reason is the hook's log line)."""


def event_of(payload: dict[str, Any]) -> str:
    event = payload.get("hook_event_name")
    return event if isinstance(event, str) and event in EVENTS else CLAUDE_EVENT


def _command(payload: dict[str, Any]) -> str:
    if payload.get("tool_name") not in SHELL_TOOLS:
        raise NotAFailure(f"skip: not a shell command ({str(payload.get('tool_name'))[:40]})")
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    if not isinstance(command, str) or not command.strip():
        raise NotAFailure("skip: bad stdin (no command string)")
    return command[:MAX_COMMAND_CHARS]


def failure_of(payload: dict[str, Any]) -> tuple[str, str]:
    """(command, error output as "Exit code N\\n<output>") of a failed shell call; NotAFailure otherwise."""
    event = event_of(payload)
    if event == CODEX_EVENT:
        command, error = _command(payload), _codex_error(payload)
    elif event == GEMINI_EVENT:
        command, error = _command(payload), _gemini_error(payload)
    else:
        if payload.get("is_interrupt") is True:
            raise NotAFailure("skip: interrupted by the user")
        command, given = _command(payload), payload.get("error")
        if not isinstance(given, str) or not given.strip():
            raise NotAFailure("skip: bad stdin (no command or error string)")
        error = given
    return command, error[:MAX_ERROR_CHARS]


def _text_of(content: Any) -> str:
    """llmContent: a string, a part ({"text": …}) or a list of them."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or "")
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    return ""


def _gemini_error(payload: dict[str, Any]) -> str:
    response = payload.get("tool_response")
    if not isinstance(response, dict):
        raise NotAFailure("skip: bad stdin (no tool_response object)")
    text = _WRAPPER.sub("", _text_of(response.get("llmContent"))).strip()
    started = response.get("error")
    if isinstance(started, dict) and started.get("message"):  # the shell itself failed to run the command
        return f"Exit code 1\n{started['message']}\n{text}".strip()
    found = _GEMINI_EXIT.findall(text)
    if not found:
        raise NotAFailure("ok: the command succeeded (no Exit Code line)")
    code = int(found[-1])
    if code == 0:
        raise NotAFailure("ok: the command succeeded (exit code 0)")
    output = _GEMINI_TRAILERS.sub("", text).strip()
    output = output.removeprefix("Output:").strip()
    if not output or output == "(empty)":
        raise NotAFailure(f"skip: exit code {code} without output")
    return f"Exit code {code}\n{output}"


def _codex_error(payload: dict[str, Any]) -> str:
    response = payload.get("tool_response")
    if isinstance(response, dict):  # not seen in 0.171 (a string); tolerate an object with the output
        response = response.get("output") or response.get("aggregated_output")
    if not isinstance(response, str):
        raise NotAFailure("skip: bad stdin (no tool_response string)")
    code = codex_exit_code(payload.get("transcript_path"), payload.get("tool_use_id"))
    if code is None:
        raise NotAFailure("skip: exit code not found in the session's rollout")
    if code == 0:
        raise NotAFailure("ok: the command succeeded (exit code 0)")
    if not response.strip():
        raise NotAFailure(f"skip: exit code {code} without output")
    return f"Exit code {code}\n{response}"


def codex_exit_code(transcript_path: Any, call_id: Any) -> int | None:
    """The exit code Codex recorded for `call_id`: the last `item_completed` (0.171) or `exec_command_end`
    (older releases) event of that call in the rollout's tail; None when there is none (yet)."""
    if not isinstance(transcript_path, str) or not transcript_path.endswith(".jsonl"):
        return None
    if not isinstance(call_id, str) or not call_id:
        return None
    try:  # a FIFO, a device or a link to one is refused at once; a huge rollout costs only its tail
        tail = bounded.read_tail(transcript_path, ROLLOUT_TAIL_BYTES)
    except OSError:
        return None
    needle = call_id.encode("utf-8")
    for raw in reversed(tail.splitlines()):
        if needle not in raw or b"exit_code" not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        event = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(event, dict):
            continue
        if event.get("type") == "item_completed":
            item = event.get("item")
            found = item if isinstance(item, dict) and item.get("id") == call_id else None
        elif event.get("type") == "exec_command_end" and event.get("call_id") == call_id:
            found = event
        else:
            found = None
        if found is not None and isinstance(found.get("exit_code"), int):
            return int(found["exit_code"])
    return None
