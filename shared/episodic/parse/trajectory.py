"""Raw session pieces to a `Trajectory`: cut long strings, then scrub every text that goes in."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from episodic.kernel.models import Event, SessionSource, ToolCall, Trajectory
from episodic.parse.builder import FILE_EDIT_TOOLS, FILE_READ_TOOLS, SHELL_TOOLS, RawCall, RawSession
from episodic.parse.project import project_of
from episodic.parse.text import ScrubCounter, TextScrubber

# Per-kind caps (chars), applied before scrubbing; the survey cuts further to its token budget.
PROMPT_CHARS = 6000
ASSISTANT_CHARS = 4000
THINKING_CHARS = 2000
SUMMARY_CHARS = 12000
COMMAND_CHARS = 2000
INPUT_VALUE_CHARS = 1000
SHORT_CHARS = 500
_MAX_INPUT_ITEMS = 50
_MAX_INPUT_DEPTH = 4


class _Times:
    """Parses ISO timestamps once each."""

    def __init__(self) -> None:
        self.cache: dict[str, datetime | None] = {}

    def __call__(self, value: str | None) -> datetime | None:
        if not value:
            return None
        if value not in self.cache:
            try:
                self.cache[value] = datetime.fromisoformat(value)
            except ValueError:
                self.cache[value] = None
        return self.cache[value]


def _scrub_input(value: Any, scrub: ScrubCounter, depth: int = 0, key: str | None = None) -> Any:
    if isinstance(value, str):
        return scrub(value, INPUT_VALUE_CHARS, key)
    if depth >= _MAX_INPUT_DEPTH:
        return scrub(str(value), SHORT_CHARS) if isinstance(value, dict | list) else value
    if isinstance(value, dict):
        items = list(value.items())[:_MAX_INPUT_ITEMS]
        return {str(k): _scrub_input(v, scrub, depth + 1, str(k)) for k, v in items}
    if isinstance(value, list):
        return [_scrub_input(v, scrub, depth + 1) for v in value[:_MAX_INPUT_ITEMS]]
    return value


def _file_path(call: RawCall) -> str | None:
    if call.name not in FILE_READ_TOOLS and call.name not in FILE_EDIT_TOOLS:
        return None
    value = call.input.get("file_path") or call.input.get("notebook_path") or call.input.get("path")
    return value if isinstance(value, str) else None


def _tool_call(call: RawCall, scrub: ScrubCounter, times: _Times, output_chars: int) -> ToolCall:
    command = (
        call.command
        if call.command is not None
        else call.input.get("command")
        if call.name in SHELL_TOOLS
        else None
    )
    path = call.file_path or _file_path(call)
    return ToolCall(
        id=call.id,
        name=call.name,
        input=_scrub_input(call.input, scrub),
        command=scrub(command, COMMAND_CHARS) if isinstance(command, str) else None,
        file_path=scrub(path, SHORT_CHARS) if path else None,
        output=scrub(call.output, output_chars),
        is_error=call.is_error,
        exit_code=call.exit_code,
        interrupted=call.interrupted,
        rejected=call.rejected,
        timestamp=times(call.timestamp),
        agent_id=call.agent_id,
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def build_trajectory(
    session: RawSession,
    *,
    source: SessionSource,
    session_id: str,
    source_sha256: str,
    main_agent: str | None,
    scrubber: TextScrubber,
    tool_output_chars: int,
) -> Trajectory:
    scrub = ScrubCounter(scrubber)
    times = _Times()
    caps = {
        "prompt": PROMPT_CHARS,
        "assistant": ASSISTANT_CHARS,
        "thinking": THINKING_CHARS,
        "compact_summary": SUMMARY_CHARS,
        "interrupt": SHORT_CHARS,
    }
    events: list[Event] = []
    calls: list[ToolCall] = []
    prompts: list[str] = []
    thinking: list[str] = []
    summaries: list[str] = []
    closing = ""
    files_read: list[str] = []
    files_edited: list[str] = []
    for raw in session.events:
        ts = times(raw.timestamp)
        if raw.call is not None:
            call = _tool_call(raw.call, scrub, times, tool_output_chars)
            calls.append(call)
            events.append(Event(kind="tool", tool=call, timestamp=ts, agent_id=raw.agent_id))
            if call.file_path and not call.is_error and not call.rejected:
                reads = call.name in FILE_READ_TOOLS or raw.call.reads_file
                (files_read if reads else files_edited).append(call.file_path)
            continue
        text = scrub(raw.text, caps.get(raw.kind, ASSISTANT_CHARS))
        events.append(Event(kind=raw.kind, text=text, timestamp=ts, agent_id=raw.agent_id))  # type: ignore[arg-type]
        main_thread = raw.agent_id == main_agent
        if raw.kind == "prompt" and main_thread:
            prompts.append(text)
        elif raw.kind == "thinking":
            thinking.append(text)
        elif raw.kind == "compact_summary":
            summaries.append(text)
        elif raw.kind == "assistant" and main_thread:
            closing = text
    cwd = scrub(session.cwd, SHORT_CHARS)
    trajectory = Trajectory(
        session_id=session_id,
        source=source,
        source_sha256=source_sha256,
        cwd=cwd,
        project=scrub(project_of(cwd, folder=session.cwd), SHORT_CHARS)
        or scrub(session.project, SHORT_CHARS),
        git_branch=scrub(session.git_branch or "", SHORT_CHARS),
        started_at=times(session.first_ts),
        ended_at=times(session.last_ts),
        titles=[scrub(t, SHORT_CHARS) for t in session.titles],
        request=prompts[0] if prompts else "",
        prompts=prompts,
        events=events,
        tool_calls=calls,
        files_read=_unique(files_read),
        files_edited=_unique(files_edited),
        thinking=thinking,
        compact_summaries=summaries,
        closing_summary=closing,
        subagents=_unique(session.subagents),
        models=session.models,
        entrypoint=session.entrypoint,
        stats=session.stats,
    )
    trajectory.stats.secrets_redacted = dict(sorted(scrub.counts.items()))
    return trajectory
