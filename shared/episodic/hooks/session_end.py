"""SessionEnd (Claude Code, Gemini CLI) or a quiet `Stop` (Codex CLI): the session that just ended gets its card in
the background, an LLM card with an agent CLI as the distiller.

The hook (`episodic hook session-distill`, stdlib only) starts one detached, low-priority worker and
returns. The worker (`episodic distill-session PATH`) stores the heuristic card first, so a failed LLM run
still leaves a card; then, within `distill_daily_cap`, it waits for one of `background_distill_processes`
slots (advisory file locks: never more `claude` runs at once) and re-distils with Claude Code, which
replaces the heuristic card; a failure is recorded and retried by the next `episodic index`.
The worker's environment carries GUARD_ENV: any episodic hook started under it does nothing (no recursion).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from episodic.plumbing import envsource

if TYPE_CHECKING:
    from episodic.kernel.settings import Settings

GUARD_ENV = "EPISODIC_DISTILLING"
LOG_FILE = "session-distill.log"
DAILY_FILE = "distill-daily.json"
LOCK_DIR = "locks"
SLOT_POLL_SECONDS = 0.1  # a freed slot is taken this soon (a non-blocking lock attempt per slot: cheap)
_MAX_STDIN = 1024 * 1024
TURN_END_EVENT = "Stop"  # Codex CLI: the turn ended (the session may go on)
SWITCH = "hook_session_end"
OFF_WORDS = ("false", "0", "no", "off")


def log_line(home: Path, message: str) -> None:
    with contextlib.suppress(Exception):
        path = home / "logs" / LOG_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message[:500]}\n")


def switched_off(env: dict[str, str]) -> bool:
    """`hook_session_end = false` (config file or EPISODIC_HOOK_SESSION_END): the user wants no distil at all."""
    value = envsource.resolve(envsource.light_values(env), SWITCH, "true")
    return str(value).strip().lower() in OFF_WORDS


def worker_command(transcript: str, after_quiet: bool = False) -> list[str]:
    quiet = ["--after-quiet"] if after_quiet else []
    return [sys.executable, "-m", "episodic", "distill-session", *quiet, transcript]


def spawn_worker(transcript: str, env: dict[str, str], after_quiet: bool = False) -> subprocess.Popen[bytes]:
    """Detached (own session), niced, no stdio; GUARD_ENV set so the hooks of anything it runs stay quiet."""
    return subprocess.Popen(
        worker_command(transcript, after_quiet),
        env={**env, GUARD_ENV: "1"},
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        preexec_fn=lambda: os.nice(10),  # low priority; only os.nice runs between fork and exec
    )


def hook_main(stdin: IO[str] | None = None) -> int:
    """The session-end hook (Claude Code's and Gemini CLI's `SessionEnd`, Codex's `Stop`: a turn ended, the
    worker waits until the session is quiet): start the worker for `transcript_path`. Always 0, prints nothing."""
    env = dict(envsource.environ())
    if env.get(GUARD_ENV):
        return 0
    home = envsource.home_dir(env)
    try:
        if switched_off(env):  # before the payload is even read: nothing starts, nothing is stored
            log_line(home, f"hook: skip: switched off ({SWITCH} = false)")
            return 0
        payload = json.loads((stdin or sys.stdin).read(_MAX_STDIN))
        transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
        if not isinstance(transcript, str) or not transcript.endswith((".jsonl", ".json")):
            raise ValueError(f"no transcript_path in the hook input (got {transcript!r})")
        spawn_worker(transcript, env, after_quiet=payload.get("hook_event_name") == TURN_END_EVENT)
    except Exception as exc:  # fail open: the session is ending
        log_line(home, f"hook: {type(exc).__name__}: {exc}")
    return 0


def _flock(path: Path, blocking: bool) -> contextlib.AbstractContextManager[bool]:
    from episodic.harvest.spool import locked  # the spool's advisory lock: same semantics, one copy

    return locked(path, blocking=blocking)


@contextlib.contextmanager
def distill_slot(home: Path, slots: int, wait_seconds: float) -> Iterator[int]:
    """Hold one of `slots` locks while a `claude` run lasts; TimeoutError when none frees up in time."""
    deadline = time.monotonic() + wait_seconds
    while True:
        for index in range(slots):
            with _flock(home / LOCK_DIR / f"distill-{index}.lock", blocking=False) as held:
                if held:
                    yield index
                    return
        if time.monotonic() > deadline:
            raise TimeoutError(f"all {slots} distiller slots stayed busy for {wait_seconds:.0f} s")
        time.sleep(SLOT_POLL_SECONDS)


def wait_until_quiet(home: Path, transcript: str, quiet_seconds: float) -> bool:
    """Codex's `Stop` ends a turn, not the session: wait until `transcript` has not changed for `quiet_seconds`.
    One waiter a session (a lock by its path); False when another waits already (it distils the later turns)."""
    import hashlib

    key = hashlib.sha256(transcript.encode("utf-8")).hexdigest()[:16]
    with _flock(home / LOCK_DIR / f"quiet-{key}.lock", blocking=False) as held:
        if not held:
            return False
        poll = min(max(quiet_seconds / 4, 0.2), 30.0)
        while (idle := time.time() - os.stat(transcript).st_mtime) < quiet_seconds:
            time.sleep(min(poll, quiet_seconds - idle + 0.05))
        return True


def take_daily_allowance(home: Path, cap: int, today: str | None = None) -> bool:
    """Count one background distil for today; False once `cap` were started today."""
    today = today or time.strftime("%Y-%m-%d")
    path = home / DAILY_FILE
    with _flock(home / LOCK_DIR / "daily.lock", blocking=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        used = int(data.get("count", 0)) if isinstance(data, dict) and data.get("date") == today else 0
        if used >= cap:
            return False
        path.write_text(json.dumps({"date": today, "count": used + 1}), encoding="utf-8")
    return True


def distill_session(settings: Settings, transcript: str) -> str:
    """The worker: heuristic card now, Claude Code's card when a slot and today's allowance permit."""
    from dataclasses import replace

    if not settings.hook_session_end:  # switched off while this worker waited for the session to go quiet
        return f"switched off ({SWITCH} = false): no card for {transcript}"
    from episodic.assembly import build_memory
    from episodic.core.ingest import index_sessions
    from episodic.distill.heuristic import HeuristicDistiller

    memory = build_memory(settings)
    first = index_sessions(replace(memory, distiller=HeuristicDistiller()), [transcript], settings.tenant)
    if first.failed or first.skipped:
        return f"no card for {transcript}: {first.failed or dict(first.skipped)}"
    from episodic.distill.agent_cli import AGENT_KINDS

    if settings.distiller not in AGENT_KINDS:  # an agent CLI writes the better card
        return f"heuristic card only: the distiller is {settings.distiller}"
    if not take_daily_allowance(settings.home, settings.distill_daily_cap):
        return (
            f"heuristic card kept: the daily cap of {settings.distill_daily_cap} is reached (index retries)"
        )
    with distill_slot(
        settings.home, settings.background_distill_processes, settings.distill_timeout_seconds * 5
    ):
        report = index_sessions(memory, [transcript], settings.tenant)
    if report.failed:
        return f"heuristic card kept, retried by the next index: {report.failed[0][1]}"
    from episodic.distill.agents import agent_cli

    label = agent_cli(settings.distiller).label
    return f"{label} card stored for {transcript} (replaced {report.replaced})"
