"""What the prompt hook reads before it asks anything: its settings (env over the config file, read once),
its one deadline, its log line, and the agent's payload (the prompt, the event it names). Stdlib only."""

from __future__ import annotations

import os
import time
from typing import Any, TextIO

from episodic.plumbing import bounded, envsource

STARTED = time.monotonic()  # moved back to the process's own start by entry(): the budget is wall time
EXIT_MARGIN_SECONDS = 0.05  # logging and exit after the deadline
MAX_STARTUP_SECONDS = 0.5
MAX_STDIN_BYTES = 4_000_000
MIN_PROMPT_CHARS = 20
MIN_PROMPT_WORDS = 4
MAX_QUERY_CHARS = 1500
DEFAULT_BUDGET_SECONDS = 1.5
LOG_MAX_BYTES = 1_000_000
LOG_LINE_CHARS = 600  # a moved port names the program, the new port and the config file


class HookSkip(Exception):
    """A reason to print nothing (logged as one line)."""


class ServerDown(HookSkip):
    """Nothing listens at the endpoint (connection refused)."""


class ForeignServer(HookSkip):
    """Another program answers at the local endpoint (its answer lacks this home's identity header)."""


def log_outcome(outcome: str, event: str = "user-prompt-submit", started: float | None = None) -> None:
    """One line in <home>/logs/hook.log: time, the hook's event, what happened, how long it took."""
    try:
        log_dir = envsource.home_dir() / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / "hook.log"
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, log_dir / "hook.log.1")
        elapsed_ms = (time.monotonic() - (STARTED if started is None else started)) * 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        line = f"{stamp} {event} {outcome.replace(chr(10), ' ')[:LOG_LINE_CHARS]} ({elapsed_ms:.0f} ms)\n"
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except Exception:  # logging must never make the hook fail
        pass


_CONFIG: dict[str, Any] = {}


def setting(name: str, default: Any = None) -> Any:
    """env (EPISODIC_*) over the config file over the default (`envsource`, the order of `Settings`), read
    once; the defaults here mirror `Settings`' (a test pins them)."""
    if not _CONFIG:
        _CONFIG.update(envsource.light_values())
        _CONFIG.setdefault("\0loaded", True)
    return envsource.resolve(_CONFIG, name, default)


def positive_number(name: str, default: float) -> float:
    try:
        value = float(setting(name, default))
    except Exception:  # a bad value, or no home folder to find the config file in: the default
        return default
    return value if value > 0 else default


def process_age() -> float:
    """Seconds since this process started (interpreter start-up counts against the budget)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime in ticks
    except Exception:  # not Linux: a typical start-up
        age = 0.08
    return min(max(age, 0.0), MAX_STARTUP_SECONDS)


def deadline() -> float:
    """The one monotonic deadline for everything: stdin, connect, send, read, formatting."""
    return STARTED + positive_number("hook_budget_seconds", DEFAULT_BUDGET_SECONDS) - EXIT_MARGIN_SECONDS


def _read_stdin(stdin: TextIO) -> str:
    raw = getattr(stdin, "buffer", None)
    if raw is None:
        return stdin.read(MAX_STDIN_BYTES)
    # bytes, decoded leniently: invalid UTF-8 in a prompt must not lose the whole prompt
    return bounded.clean_text(raw.read(MAX_STDIN_BYTES).decode("utf-8", "replace"))


def read_payload(stdin: TextIO) -> dict[str, Any]:
    try:
        payload = bounded.loads(_read_stdin(stdin) or "null", max_bytes=MAX_STDIN_BYTES)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookSkip(f"skip: bad stdin ({type(exc).__name__})") from exc
    return payload if isinstance(payload, dict) else {}


def read_prompt(stdin: TextIO) -> str:
    return prompt_of(read_payload(stdin))


def prompt_of(payload: dict[str, Any]) -> str:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise HookSkip("skip: bad stdin (no prompt string)")
    prompt = bounded.clean_text(prompt).strip()  # a `\ud800` escape: the server refuses lone surrogates
    if prompt.startswith("/"):
        raise HookSkip("skip: slash command")
    if len(prompt) < MIN_PROMPT_CHARS or len(prompt.split()) < MIN_PROMPT_WORDS:
        raise HookSkip("skip: short prompt")
    return prompt


PROMPT_EVENTS = ("UserPromptSubmit", "BeforeAgent")  # Claude Code and Codex CLI; Gemini CLI


def prompt_event(payload: dict[str, Any]) -> str:
    """The event the answer names: each CLI takes `hookSpecificOutput.additionalContext` under its own."""
    event = payload.get("hook_event_name")
    return event if event in PROMPT_EVENTS else PROMPT_EVENTS[0]
