"""The failure hook (Claude Code `PostToolUseFailure`, Codex `PostToolUse`, Gemini CLI `AfterTool`, each
for its shell tool): when a shell command fails with an error an earlier session met and got past, inject one
short entry saying what ended it; nothing otherwise (a succeeded command included).

Each CLI's payload is read by `episodic.hooks.failure_payloads` (the failing command, its exit code and output).
The same rules as the prompt hook (`episodic.hooks.prompt`): stdlib
only, one budget from process start, fail open (exit 0, nothing printed, one log line in
<home>/logs/hook.log), the recursion guard, the token and the scope rules; the local server scrubs the
command and error before anything else (`recall_failure`, tenant from the token).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from episodic.hooks import failure_payloads
from episodic.hooks import packing as hook_packing
from episodic.hooks import payload as hook_payload
from episodic.hooks import prompt as hook
from episodic.hooks import server_client as hook_server
from episodic.plumbing import envsource
from episodic.plumbing.marker import wrap_injected

STARTED = time.monotonic()  # moved back to the process's own start by entry(): the budget is wall time
MAX_ENTRY_CHARS = 900


def _log(outcome: str) -> None:
    hook_payload.log_outcome(outcome, "post-tool-failure", STARTED)


def deadline() -> float:
    budget = hook_payload.positive_number("hook_budget_seconds", hook_payload.DEFAULT_BUDGET_SECONDS)
    return STARTED + budget - hook_payload.EXIT_MARGIN_SECONDS


def switched_off() -> bool:
    return str(hook.setting("hook_failure", "true")).lower() in ("false", "0", "no", "off")


def failure_of(payload: dict[str, Any]) -> tuple[str, str]:
    """(command, error output) of a failed shell call in any of the CLIs' payloads; HookSkip otherwise."""
    try:
        return failure_payloads.failure_of(payload)
    except failure_payloads.NotAFailure as why:
        raise hook.HookSkip(str(why)) from why


def ask_server(url: str, token: str, arguments: dict[str, Any], timeout: float) -> str:
    """One stateless tools/call of recall_failure; the entry's text, or HookSkip saying why none."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall_failure", "arguments": arguments},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": hook_server.PROTOCOL_VERSION,
        "Authorization": f"Bearer {token}",
    }
    raw = hook_server._post(url, json.dumps(body).encode("utf-8"), headers, timeout)
    try:
        answer = json.loads(raw)
        if "error" in answer:  # an older server without the tool: a JSON-RPC error
            raise hook.HookSkip(f"fail: server error: {str(answer['error'].get('message'))[:120]}")
        result = answer["result"]
        if result.get("isError"):
            raise hook.HookSkip(
                "fail: tool error: " + str(result.get("content", [{}])[0].get("text", ""))[:200]
            )
        structured = result["structuredContent"]
        text = result["content"][0]["text"]
    except hook.HookSkip:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise hook.HookSkip(f"fail: bad response ({type(exc).__name__})") from exc
    if not isinstance(structured, dict) or not structured.get("match"):
        reason = structured.get("reason") if isinstance(structured, dict) else ""
        raise hook.HookSkip(f"ok: no strong match ({str(reason)[:80] or 'none'})")
    if not isinstance(text, str) or not text.strip():
        raise hook.HookSkip("fail: bad response (empty entry)")
    return text


def run(stdin: TextIO) -> tuple[str, str]:
    """Do the work; returns (what to print, the log line). Raises HookSkip for every silent path."""
    if envsource.environ().get("EPISODIC_DISTILLING"):  # a distiller's own run: never recurse into memory
        raise hook.HookSkip("skip: inside a background distil")
    if switched_off():
        raise hook.HookSkip("skip: switched off (hook_failure = false)")
    payload = hook.read_payload(stdin)
    command, error = failure_of(payload)
    hook.out_of_scope(payload)
    url, token = hook.endpoint()
    remaining = deadline() - time.monotonic() - 0.05
    if remaining <= 0.05:
        raise hook.HookSkip("fail: budget spent before the request")
    session = payload.get("session_id")
    arguments: dict[str, Any] = {
        "command": command,
        "error": error,
        "session_id": str(session)[:200] if session else "",
        "agent": hook.agent_of(payload),
    }
    if hook.review_required():  # only sessions whose card a person approved (the server checks it too)
        arguments["approved_only"] = True
    started = ""

    def ask(at: str, timeout: float) -> str:
        return ask_server(at, token, arguments, timeout)

    # as the prompt hook: no server, or another program on its port: start (or move) it, wait in the budget
    try:
        entry = ask(url, remaining)
    except hook.ServerDown as down:
        entry, started = hook_server.retry_started(url, down, ask, deadline)
        started = f"; {started}"
    except hook.ForeignServer as foreign:
        entry, started, _ = hook_server.retry_moved(url, foreign, ask, deadline)
        started = f"; {str(foreign).removeprefix('fail: ')}; {started}"
    context = wrap_injected(hook_packing._cut(entry, MAX_ENTRY_CHARS))
    event = failure_payloads.event_of(payload)  # Claude Code, Codex and Gemini CLI take the same answer
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(
        output, ensure_ascii=False
    ), f"ok: injected the fix of an earlier session ({len(context)} chars){started}"


def main(stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Always 0; the work runs in a thread cut at the deadline (a stalled server, stdin never closed)."""
    return hook.guarded(run, stdin or sys.stdin, stdout or sys.stdout, deadline, _log, "failure-hook")


def entry() -> None:
    """Process entry (`python -m episodic.hooks.failure`, `episodic hook post-tool-failure`)."""

    def started(at: float) -> None:
        global STARTED
        STARTED = at

    hook.run_fail_open(main, started)


if __name__ == "__main__":
    entry()
