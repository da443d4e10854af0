"""Outcome measures of one session, read from its transcript when it is indexed (no model calls).

Built on the evidence judge's one reading of the trace (`distill.evidence`): whether the session ended
verified, how many checks failed, how long it took from the first failing check to the next passing one,
how many edits were undone, the tokens the transcript records and the wall time. Stored locally in
`<home>/experiment/measures.jsonl` (the newest line of a session wins) for sessions in the experiment log.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from episodic.distill.checks import judge_outcome
from episodic.distill.evidence import (
    CheckResult,
    check_result,
    command_segments,
    is_edit,
    ordered_events,
    shell_command,
    tool_calls_in,
)
from episodic.experiment.holdout import LOG_DIR
from episodic.kernel.models import Event, Outcome, ToolCall, Trajectory

MEASURES_FILE = "measures.jsonl"
MAX_USAGE_LINE_BYTES = 1_000_000
# shell commands that throw work away (a revert of edits, not a new change)
_REVERT_RE = re.compile(
    r"^git\s+(?:checkout\s+(?:\S+\s+)?--\s|restore\s(?!.*--staged\b(?!.*--worktree))|revert\b|reset\s+--hard"
    r"|stash(?:\s+(?:push|save)\b|\s*$))"
)


class SessionMeasures(BaseModel):
    """What one session's transcript shows about how it went (the experiment's outcome measures)."""

    session_id: str
    source_sha256: str = ""
    measured_at: str = ""
    outcome: str
    verified: bool
    failed_checks: int
    tool_calls_to_green: int | None = None  # from the first failing check to the next passing one
    turns_to_green: int | None = None  # user prompts in that stretch
    reverted_edits: int
    total_tokens: int | None = None  # input (incl. cache) + output, when the transcript records usage
    wall_seconds: float | None = None
    tool_calls: int = 0
    turns: int = 0


def _undoes(later: ToolCall, earlier: ToolCall) -> bool:
    """An Edit that puts back exactly what an earlier Edit of the same file replaced."""
    if later.name != "Edit" or earlier.name != "Edit":
        return False
    if (later.file_path or later.input.get("file_path")) != (
        earlier.file_path or earlier.input.get("file_path")
    ):
        return False
    old, new = later.input.get("old_string"), later.input.get("new_string")
    return (
        isinstance(old, str)
        and old != new
        and old == earlier.input.get("new_string")
        and new == earlier.input.get("old_string")
    )


def reverted_edits(events: list[Event]) -> int:
    applied: list[ToolCall] = []
    count = 0
    for _, call in tool_calls_in(events):
        if call.rejected or call.is_error:
            continue
        command = shell_command(call)
        if command and any(_REVERT_RE.match(seg) for seg in command_segments(command)):
            count += 1
        elif is_edit(call):
            if any(_undoes(call, earlier) for earlier in applied):
                count += 1
            applied.append(call)
    return count


def _to_green(events: list[Event]) -> tuple[int | None, int | None]:
    """(tool calls, user prompts) after the first failing check up to the first passing check after it."""
    first_fail: int | None = None
    for position, call in tool_calls_in(events):
        result = check_result(call)
        if result is CheckResult.FAILED and first_fail is None:
            first_fail = position
        elif result is CheckResult.PASSED and first_fail is not None:
            stretch = events[first_fail + 1 : position + 1]
            return sum(e.kind == "tool" for e in stretch), sum(e.kind == "prompt" for e in stretch)
    return None, None


def _usage_tokens(line: dict[str, object]) -> tuple[str, int] | None:
    """(message id, tokens) of a Claude Code assistant line; ('codex-total', total) of a Codex token count."""
    message = line.get("message")
    if (
        line.get("type") == "assistant"
        and isinstance(message, dict)
        and isinstance(message.get("usage"), dict)
    ):
        usage = message["usage"]
        keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
        total = sum(int(usage.get(k) or 0) for k in keys if isinstance(usage.get(k) or 0, int))
        return f"{message.get('id')}:{line.get('requestId')}", total
    payload = line.get("payload")
    if isinstance(payload, dict) and payload.get("type") == "token_count":
        info = payload.get("info")
        totals = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(totals, dict) and isinstance(totals.get("total_tokens"), int):
            return "codex-total", int(totals["total_tokens"])
    return None


def total_tokens(paths: Iterable[str]) -> int | None:
    """Tokens the transcript records: usage once per API response (message id + request id), the
    largest running total for Codex; None when no line records usage."""
    per_response: dict[str, int] = {}
    for path in paths:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below, lines read lazily
        except OSError:
            continue
        with handle:
            for raw in handle:
                if (b'"usage"' not in raw and b"token_count" not in raw) or len(raw) > MAX_USAGE_LINE_BYTES:
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                found = _usage_tokens(line) if isinstance(line, dict) else None
                if found is not None:
                    key, tokens = found
                    per_response[key] = max(per_response.get(key, 0), tokens)
    return sum(per_response.values()) if per_response else None


def measure(trajectory: Trajectory) -> SessionMeasures:
    events = ordered_events(trajectory)
    outcome = judge_outcome(trajectory)
    calls_to_green, turns_to_green = _to_green(events)
    wall = None
    if trajectory.started_at and trajectory.ended_at:
        wall = max((trajectory.ended_at - trajectory.started_at).total_seconds(), 0.0)
    return SessionMeasures(
        session_id=trajectory.session_id,
        source_sha256=trajectory.source_sha256,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        outcome=outcome.value,
        verified=outcome is Outcome.VERIFIED,
        failed_checks=sum(check_result(c) is CheckResult.FAILED for _, c in tool_calls_in(events)),
        tool_calls_to_green=calls_to_green,
        turns_to_green=turns_to_green,
        reverted_edits=reverted_edits(events),
        total_tokens=total_tokens(trajectory.source.paths),
        wall_seconds=wall,
        tool_calls=sum(e.kind == "tool" for e in events),
        turns=len(trajectory.prompts),
    )


def measures_path(home: Path) -> Path:
    return home / LOG_DIR / MEASURES_FILE


def save(home: Path, measures: SessionMeasures) -> None:
    path = measures_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (measures.model_dump_json() + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def _lines(path: Path) -> Iterator[SessionMeasures]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            yield SessionMeasures.model_validate_json(line)
        except ValidationError:
            continue


def load_all(home: Path) -> dict[str, SessionMeasures]:
    """The newest measures of every session (a grown session was measured again)."""
    return {m.session_id: m for m in _lines(measures_path(home))}
