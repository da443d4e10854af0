"""The prompt hook (Claude Code's and Codex CLI's `UserPromptSubmit`, Gemini CLI's `BeforeAgent`): inject up to
3 verified past episodes similar to the prompt. The three CLIs send `prompt`, `session_id`, `cwd` and
`hook_event_name` and take the same answer, `hookSpecificOutput.additionalContext` (docs/wiring.md).

Never blocks: every failure path (server down or slow, bad stdin, bad answer, missing config, nothing
similar) exits 0 within the budget, prints nothing and appends one line to <home>/logs/hook.log.
Stdlib only (plus the stdlib-only `episodic.plumbing.envsource`, `episodic.plumbing.bounded`, `episodic.plumbing.marker` and
`episodic.plumbing.autostart`): it runs on every prompt. One deadline (process start + budget) bounds stdin, connect,
send, read and output. No local server answering: it starts one in the background (fail open).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from episodic.hooks import payload as hook_payload
from episodic.hooks.packing import DEFAULT_MAX_CHARS, build_context, is_strong
from episodic.hooks.payload import (
    MAX_QUERY_CHARS,
    ForeignServer,
    HookSkip,
    ServerDown,
    deadline,
    log_outcome,
    positive_number,
    process_age,
    prompt_event,
    prompt_of,
    read_payload,
    setting,
)
from episodic.hooks.server_client import (
    ask_server,
    endpoint,
    move_and_retry,
    review_required,
    scratch_block,
    start_and_retry,
)
from episodic.plumbing import envsource
from episodic.plumbing.hook_choice import PROBE_SESSION


def out_of_scope(payload: dict[str, Any]) -> None:
    """HookSkip when the scope rules (settings, the repository's `.episodic` file) exclude injection here."""
    from episodic.sessions.scope import ScopeRules

    cwd = payload.get("cwd")
    decision = ScopeRules.from_values(setting).decide("inject", cwd if isinstance(cwd, str) else "")
    if not decision.included:
        raise HookSkip(f"skip: {decision.reason}")


def held_out(payload: dict[str, Any], hits: list[dict[str, Any]], scratch: bool = False) -> bool:
    """The experiment's call-out: True when this session is in the holdout arm (the decision is logged);
    a holdout session gets neither episodes nor prior attempts."""
    from episodic.experiment import holdout

    try:
        return holdout.decide(payload, hits, setting, envsource.home_dir(), scratch) == "without"
    except Exception:  # an unrecorded decision is no experiment: the session gets its memory
        return False


def receiving_session(payload: dict[str, Any]) -> tuple[str, str] | None:
    """(session id, agent) for the server to record what this session is given; None when the session has
    no usable id or is held out (the experiment: it is given nothing, so nothing is recorded)."""
    from episodic.experiment import holdout

    session_id = holdout.valid_id(payload.get("session_id"))
    if session_id is None or session_id == PROBE_SESSION:  # a probe is no session: nothing to remember
        return None
    share = holdout.holdout_share(setting)
    if share is not None and holdout.arm_for(session_id, share) == "without":
        return None
    return session_id, agent_of(payload)


def agent_of(payload: dict[str, Any]) -> str:
    """Which CLI sent the payload: Gemini CLI names its own event; Codex keeps its transcripts in ~/.codex."""
    if payload.get("hook_event_name") in ("BeforeAgent", "AfterTool"):
        return "gemini"
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str) and "/.codex/" in transcript.replace("\\", "/"):
        return "codex"
    return "claude-code"


def run(stdin: TextIO) -> tuple[str, str]:
    """Do the work; returns (what to print, the log line). Raises HookSkip for every silent path."""
    max_chars = int(positive_number("hook_max_chars", DEFAULT_MAX_CHARS))
    if envsource.environ().get("EPISODIC_DISTILLING"):  # a distiller's own run: never recurse into memory
        raise HookSkip("skip: inside a background distil")
    if str(setting("hook_prompt", "true")).lower() in ("false", "0", "no", "off"):
        raise HookSkip("skip: switched off (hook_prompt = false)")
    payload = read_payload(stdin)
    prompt = prompt_of(payload)
    out_of_scope(payload)
    url, token = endpoint()
    # leave a margin for formatting and exit inside the budget
    remaining = deadline() - time.monotonic() - 0.05
    if remaining <= 0.05:
        raise HookSkip("fail: budget spent before the request")
    started = ""
    receiving = receiving_session(payload)
    try:
        hits = ask_server(url, token, prompt[:MAX_QUERY_CHARS], remaining, receiving)
    except ServerDown as down:
        hits, started = start_and_retry(url, token, prompt[:MAX_QUERY_CHARS], down, receiving)
        started = f"; {started}"
    except ForeignServer as foreign:
        hits, started, url = move_and_retry(url, token, prompt[:MAX_QUERY_CHARS], foreign, receiving)
        started = f"; {str(foreign).removeprefix('fail: ')}; {started}"
    scratch = scratch_block(url, token, prompt[:MAX_QUERY_CHARS])
    if not hits and not scratch:
        if review_required():  # the real cause: only approved cards may be injected, and none matched
            raise HookSkip(
                f"ok: no approved card matched (review_required: approve cards in `episodic ui`){started}"
            )
        raise HookSkip(f"ok: no confident or weak match among verified episodes{started}")
    if held_out(payload, hits, bool(scratch)):
        withheld = " and prior attempts" if scratch else ""
        raise HookSkip(f"ok: holdout session (experiment): withheld {len(hits)} episode(s){withheld}")
    output = {
        "hookSpecificOutput": {
            "hookEventName": prompt_event(payload),
            "additionalContext": build_context(hits, max_chars, scratch),
        }
    }
    extra = " + prior similar attempts" if scratch else ""
    strong = sum(1 for h in hits if is_strong(h))
    injected = f"{strong} episode(s) and {len(hits) - strong} weak pointer(s)"
    return json.dumps(output, ensure_ascii=False), f"ok: injected {injected}{extra}{started}"


def guarded(
    run: Callable[[TextIO], tuple[str, str]],
    stdin: TextIO,
    stdout: TextIO,
    until: Callable[[], float],
    log: Callable[[str], None],
    name: str,
) -> int:
    """Always 0: `run` in a thread cut at `until()` (stdin never closed, a stalled server), its text
    written, one log line; every hook of this package runs through it."""
    import threading

    outcome: list[tuple[str, str]] = []

    def work() -> None:
        try:
            outcome.append(run(stdin))
        except HookSkip as skip:
            outcome.append(("", str(skip)))
        except BaseException as exc:  # fail open on anything
            outcome.append(("", f"fail: unexpected {type(exc).__name__}: {exc}"))

    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    worker.join(max(until() - time.monotonic(), 0.0))
    if worker.is_alive() or not outcome:
        log("fail: timed out (budget exceeded)")
        return 0
    text, line = outcome[0]
    try:
        if text:
            stdout.write(text)
            stdout.flush()
    except Exception as exc:  # a closed stdout is not our failure to report to Claude Code
        line = f"fail: cannot write stdout ({type(exc).__name__})"
    log(line)
    return 0


def main(stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Always 0; a watchdog thread ends the process silently if the budget runs out."""
    return guarded(run, stdin or sys.stdin, stdout or sys.stdout, deadline, log_outcome, "hook")


def run_fail_open(run: Callable[[], int], started: Callable[[float], None]) -> None:
    """A hook process: `started` gets the process's own start (the budget is wall time), `run` does the work;
    never a traceback on stderr, never a non-zero exit, never a wait for a stuck worker thread."""
    code = 0
    try:
        started(time.monotonic() - process_age())
        code = run()
        sys.stdout.flush()
    except BaseException:  # fail open
        code = 0
    finally:
        os._exit(code)


def entry() -> None:
    """Process entry (`python -m episodic.hooks.prompt`, `episodic hook user-prompt-submit`)."""
    run_fail_open(main, lambda at: setattr(hook_payload, "STARTED", at))


if __name__ == "__main__":
    entry()
