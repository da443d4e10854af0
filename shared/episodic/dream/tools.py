"""The MCP tool `get_dream_record`: the latest weekly record (or a given week's), or its hand-off synthesis,
for the caller's tenant. A thin face over the record archive."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from episodic.dream.port import DreamArchive
from episodic.dream.weeks import IsoWeek
from episodic.kernel.auth import Principal
from episodic.kernel.errors import NotFoundError
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import ToolArguments, ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

TOOL_NAME = "get_dream_record"
DREAM = "dream"  # the feature's name: its part in `Memory.parts` is the archive


class DreamArguments(ToolArguments):
    week: str | None = Field(
        None, pattern=r"^\d{4}-W\d{2}$", description="An ISO week like 2026-W30; omit for the latest record."
    )
    part: Literal["record", "synthesis"] | None = Field(
        None, description="record (default): the full weekly record; synthesis: the short hand-off."
    )


class DreamResult(ToolResult):
    week: str
    part: str
    weeks_available: list[str]
    text: str


DESCRIPTION = (
    "Read the team's weekly dream record: what recurred across sessions, the key decisions already made "
    "(do not reopen them without a new reason), unfinished threads with their carry-over cost, insights, "
    "risks and numbered flags for review; every claim cites [session-id date]. Call it at the start of "
    "planning or a review, or when asked what was decided or left open recently. part=synthesis gives the "
    "short hand-off. Omit week for the latest."
)


def dream_tool(archive_for: Any) -> Tool:
    """The read tool over the archive `archive_for()` returns (called per request; the caller may cache)."""

    def handler(principal: Principal, args: DreamArguments) -> ToolOutput:
        archive: DreamArchive = archive_for()
        weeks = archive.weeks(principal.tenant_id)
        part = args.part or "record"
        if not weeks:
            raise NotFoundError("no dream record exists yet (run `episodic dream`)")
        week = IsoWeek.parse(args.week) if args.week else weeks[-1]
        text = archive.read(principal.tenant_id, week, part)
        if text is None:
            raise NotFoundError(
                f"no dream {part} for {week}; weeks with a record: {', '.join(map(str, weeks[-12:]))}"
            )
        return ToolOutput(
            text, {"week": str(week), "part": part, "weeks_available": [str(w) for w in weeks], "text": text}
        )

    return Tool.from_model(
        DreamArguments,
        handler,
        name=TOOL_NAME,
        title="Read the weekly dream record",
        description=DESCRIPTION,
        result=DreamResult,
    )


def memory_dream_tool(memory: Memory) -> Tool:
    """The tool over the dream feature's part: the archive the assembly chose (the bucket on AWS)."""

    def archive_for() -> DreamArchive:
        archive = memory.part(DREAM)
        if not isinstance(archive, DreamArchive):
            raise NotFoundError("no dream records here: the dream feature has no archive in this memory")
        return archive

    return dream_tool(archive_for)


def dream_tools(memory: Memory) -> list[Tool]:
    """The dream feature's MCP tools (episodic.dream.feature)."""
    return [memory_dream_tool(memory)]
