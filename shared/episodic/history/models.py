"""The history store's boundary models: one record per session, links to work items, search hits."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

HISTORY_SCHEMA_VERSION = 2  # 2: turns carry their tool uses
ItemKind = Literal["github", "jira", "beads"]
LinkOrigin = Literal["confirmed", "detected"]


ToolOutcome = Literal["ok", "error", "rejected", "interrupted"]


class ToolUse(BaseModel):
    """One tool use of a turn, as a line: the tool, what it acted on (scrubbed, cut), how it ended."""

    tool: str
    target: str = ""  # the file, command's first line, search query or URL
    outcome: ToolOutcome = "ok"
    web: bool = False  # a web search or fetch
    at: datetime | None = None


class Turn(BaseModel):
    """One user prompt in full (scrubbed) and the assistant's last text before the next prompt."""

    index: int
    prompt: str
    reply: str = ""  # the assistant's closing text for this prompt, cut to REPLY_CHARS
    at: datetime | None = None
    tools: list[ToolUse] = Field(default_factory=list)  # in order; empty in records before schema 2


class HistoryRecord(BaseModel):
    """A session's history: metadata and what was said and touched; never raw tool output."""

    tenant_id: str
    session_id: str
    source_sha256: str
    project: str = ""
    cwd: str = ""
    git_branch: str = ""
    agent: str = "claude-code"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    titles: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    closing_summary: str = ""
    compact_summaries: list[str] = Field(default_factory=list)
    files_touched: list[str] = Field(default_factory=list)
    files_edited: list[str] = Field(default_factory=list)
    tools_used: dict[str, int] = Field(default_factory=dict)
    subagents: list[str] = Field(default_factory=list)  # "type: description" of each launched subagent
    schema_version: int = HISTORY_SCHEMA_VERSION

    @property
    def prompts(self) -> list[str]:
        return [t.prompt for t in self.turns]

    def search_text(self) -> str:
        """What the full-text index holds: prompts, replies, summaries, titles, files, branch."""
        parts = [*self.titles, self.git_branch, self.project]
        for turn in self.turns:
            parts += [turn.prompt, turn.reply]
        parts += [self.closing_summary, *self.compact_summaries, *self.files_touched, *self.subagents]
        return "\n".join(p for p in parts if p)


class WorkLink(BaseModel):
    """A session tied to a tracked work item; links are appended, never overwritten."""

    tenant_id: str
    session_id: str
    item: str  # normalised: "#123", "owner/repo#123", "ENT-297", "bd-a1b2"
    kind: ItemKind
    origin: LinkOrigin
    linked_at: datetime
    cwd: str = ""
    terminal: str = ""
    evidence: str = ""  # where a detected link came from: "branch", "prompt", "command"
    url: str = ""
    session_name: str = ""  # the session's title when it was linked (empty: not indexed yet, or untitled)


class HistoryFilters(BaseModel):
    since: datetime | None = None
    until: datetime | None = None
    project: str | None = None
    session_id: str | None = None


class SessionMatch(BaseModel):
    """One session matching a full-text query: how often and where (turn indexes) it mentions it."""

    session_id: str
    score: float
    count: int
    turns: list[int] = Field(default_factory=list)  # turn indexes whose prompt or reply matched
    in_summary: bool = False
    snippet: str = ""
    missing: list[str] = Field(
        default_factory=list
    )  # the query's words it never mentions (a some-words match)
