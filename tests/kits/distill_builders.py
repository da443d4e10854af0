"""Hand-made trajectories for the distiller tests (the parser is tested on real transcripts elsewhere)."""

from __future__ import annotations

import itertools

from episodic.kernel.models import Event, SessionSource, ToolCall, Trajectory

_ids = itertools.count()


def prompt(text: str) -> Event:
    return Event(kind="prompt", text=text)


def say(text: str) -> Event:
    return Event(kind="assistant", text=text)


def bash(command: str, output: str = "", *, exit_code: int | None = None, description: str = "") -> Event:
    failed = exit_code not in (None, 0)
    call = ToolCall(
        id=f"t{next(_ids)}",
        name="Bash",
        input={"command": command, **({"description": description} if description else {})},
        command=command,
        output=(f"Exit code {exit_code}\n" if failed else "") + output,
        is_error=failed,
        exit_code=exit_code,
    )
    return Event(kind="tool", tool=call)


def tool(
    name: str, path: str = "", *, is_error: bool = False, rejected: bool = False, **extra: object
) -> Event:
    call = ToolCall(
        id=f"t{next(_ids)}",
        name=name,
        input={"file_path": path, **extra} if path else dict(extra),
        file_path=path or None,
        is_error=is_error,
        rejected=rejected,
        output="String to replace not found" if is_error else "ok",
    )
    return Event(kind="tool", tool=call)


def edit(path: str = "/home/dev/proj/src/app/handler.go", **kwargs: bool) -> Event:
    return tool("Edit", path, **kwargs)


def trajectory(
    *events: Event, titles: list[str] | None = None, closing: str = "", compact: str = ""
) -> Trajectory:
    prompts = [e.text for e in events if e.kind == "prompt"]
    calls = [e.tool for e in events if e.tool is not None]
    return Trajectory(
        session_id="s-1",
        source=SessionSource(session_key="s-1", main_path="s-1.jsonl"),
        source_sha256="0" * 64,
        cwd="/home/dev/proj",
        project="proj",
        titles=titles or [],
        request=prompts[0] if prompts else "",
        prompts=prompts,
        events=list(events),
        tool_calls=calls,
        files_read=[c.file_path for c in calls if c.name == "Read" and c.file_path],
        files_edited=[c.file_path for c in calls if c.name in ("Edit", "Write") and c.file_path],
        compact_summaries=[compact] if compact else [],
        closing_summary=closing or next((e.text for e in reversed(events) if e.kind == "assistant"), ""),
    )
