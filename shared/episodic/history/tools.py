"""The history MCP tools, thin faces over `episodic.history.service` / `views`, each result within a budget.

Budget: Claude Code refuses MCP results over 25,000 tokens (MAX_MCP_OUTPUT_TOKENS) and warns past 10,000;
a result here is at most TEXT_BUDGET characters of text plus STRUCTURED_BUDGET of JSON, 40,000 characters
in all: under 20,000 tokens even at a pessimistic 2 characters a token, about 10,000 at the usual 4.
Whatever is cut is said: `truncated: true` and a line in the text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field

from episodic.history.params import RangeArguments
from episodic.history.views import DEFAULT_THREAD_CHARS
from episodic.kernel.auth import WRITE, Principal
from episodic.mcp.registry import Tool, ToolOutput
from episodic.mcp.schema import ToolArguments, ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

TEXT_BUDGET = 16_000
STRUCTURED_BUDGET = 24_000
CUT_NOTE = "\n[result truncated to stay under the tool-result budget: narrow the topic or the dates]"
WRITE_ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
}

Limit = Annotated[int, Field(ge=1, le=50, description="At most this many sessions.")]


class TopicArguments(RangeArguments):
    topic: str = Field(
        min_length=1,
        max_length=500,
        description="Words to find (every word must occur, as a word or word prefix), e.g. 'worktree ci'.",
    )


class SearchArguments(TopicArguments):
    limit: Limit = 20


class ThreadArguments(TopicArguments):
    max_chars: int = Field(DEFAULT_THREAD_CHARS, ge=500, le=TEXT_BUDGET)


class QueryArguments(TopicArguments):
    session_id: str | None = Field(None, description="Only this session.")
    context: int = Field(1, ge=0, le=10)
    limit: Limit = 10


class TimelineArguments(RangeArguments):
    week: str | None = Field(None, description="An ISO week like 2026-W30.")


class LinkArguments(ToolArguments):
    session_id: str = Field(min_length=1, max_length=128)
    item: str = Field(min_length=1, max_length=300)
    cwd: str | None = Field(
        None,
        max_length=1000,
        description="The session's working folder (kept with the link; nothing runs there).",
    )
    terminal: str | None = Field(None, max_length=200)


class TargetArguments(ToolArguments):
    target: str = Field(min_length=1, max_length=300)


Truncated = Annotated[bool, Field(description="True when entries were dropped to stay within the budget.")]


class Found(ToolResult):
    results: list[dict[str, Any]]
    truncated: Truncated


class Thread(ToolResult):
    sessions: list[str]
    truncated: Truncated
    more_sessions: int | None = Field(None, description="Matching sessions not shown.")


class Decisions(ToolResult):
    decisions: list[dict[str, Any]]
    truncated: Truncated
    message: str | None = None


class Timeline(ToolResult):
    days: list[dict[str, Any]]
    truncated: Truncated


class Link(ToolResult):
    model_config = ConfigDict(extra="allow")  # a link as stored: further fields pass through

    tenant_id: str | None = None
    session_id: str
    item: str
    kind: str
    origin: str
    linked_at: str
    cwd: str | None = None
    terminal: str | None = None
    evidence: str | None = None
    url: str | None = None


class Links(ToolResult):
    links: list[dict[str, Any]]
    truncated: Truncated
    kind: Literal["session", "item"] | None = None


def budgeted(text: str, structured: dict[str, Any], list_key: str) -> ToolOutput:
    """Cut the text and drop list entries from the end until both fit; say so in both."""
    truncated = False
    if len(text) > TEXT_BUDGET:
        text, truncated = text[: TEXT_BUDGET - len(CUT_NOTE)] + CUT_NOTE, True
    items = structured.get(list_key)
    while isinstance(items, list) and items and len(json.dumps(structured, default=str)) > STRUCTURED_BUDGET:
        items.pop()
        truncated = True
    if truncated:
        structured["truncated"] = True
        if CUT_NOTE not in text:
            text += CUT_NOTE
    else:
        structured.setdefault("truncated", False)
    return ToolOutput(text, structured)


HISTORY_TOOL_NAMES = (
    "history_search",
    "history_thread",
    "history_query",
    "history_decisions",
    "history_timeline",
    "link_work_item",
    "work_item_sessions",
)


def history_tools(memory: Memory) -> list[Tool]:
    from episodic.history import service, views

    def search(principal: Principal, args: SearchArguments) -> ToolOutput:
        hits = service.search_history(
            memory, principal.tenant_id, args.topic, args.filters(), args.limit, some_words=True
        )
        partial = sum(bool(h.match.missing) for h in hits)
        some = f" ({partial} of them only some of its words)" if partial else ""
        lines = [f"{len(hits)} session(s) mention {args.topic!r}{some}, best first:"] + [
            f"- {h.summary.date} {h.match.session_id} [{h.summary.outcome}] {h.summary.record.project}: "
            f"{h.match.count} mention(s)"
            + (f" (not: {', '.join(h.match.missing)})" if h.match.missing else "")
            + f"; {h.match.snippet} (resume: {h.summary.resume()})"
            for h in hits
        ]
        return budgeted("\n".join(lines), {"results": [h.as_json() for h in hits]}, "results")

    def thread(principal: Principal, args: ThreadArguments) -> ToolOutput:
        max_chars = min(args.max_chars, TEXT_BUDGET)
        doc = views.topic_thread(memory, principal.tenant_id, args.topic, args.filters(), max_chars)
        structured = {"sessions": doc.sessions, "truncated": doc.truncated, "more_sessions": doc.more}
        return budgeted(doc.text, structured, "sessions")

    def query(principal: Principal, args: QueryArguments) -> ToolOutput:
        filters = args.filters(session_id=args.session_id)
        results = views.query_history(
            memory, principal.tenant_id, args.topic, filters, args.context, args.limit
        )
        text = json.dumps(results, ensure_ascii=False, default=str)
        return budgeted(text, {"results": results}, "results")

    def decisions(principal: Principal, args: TopicArguments) -> ToolOutput:
        found, message = views.find_decisions(memory, principal.tenant_id, args.topic, args.filters())
        lines = [
            f"[{i}] {d.session.date} {d.session.record.session_id} ({d.source}): {d.text}"
            for i, d in enumerate(found, 1)
        ]
        return budgeted(
            "\n".join([*lines, message]),
            {"decisions": [d.as_json() for d in found], "message": message},
            "decisions",
        )

    def timeline(principal: Principal, args: TimelineArguments) -> ToolOutput:
        days = views.timeline(memory, principal.tenant_id, args.filters(week=args.week))
        doc = views.timeline_text(days, TEXT_BUDGET)
        structured = {"days": [{"date": d, "sessions": [s.as_json() for s in ss]} for d, ss in days]}
        out = budgeted(doc.text, structured, "days")
        if doc.truncated and out.structured is not None:
            out.structured["truncated"] = True
        return out

    def link(principal: Principal, args: LinkArguments) -> ToolOutput:
        from episodic.history.tracker import BeadsTracker, NoTracker

        # a remote caller's recorded folders come from transcripts it sent: only the server's own tenant
        # (its sessions ran on this machine) has its tracker asked, in the session's recorded folder
        own = principal.tenant_id == memory.settings.tenant
        made = service.link_session(
            memory,
            principal.tenant_id,
            args.session_id,
            args.item,
            cwd=args.cwd or "",
            terminal=args.terminal or "",
            tracker=BeadsTracker() if own else NoTracker(),
        )
        data = made.model_dump(mode="json")
        return ToolOutput(
            f"Linked session {made.session_id} to {made.item} ({made.linked_at.isoformat()}).", data
        )

    def links(principal: Principal, args: TargetArguments) -> ToolOutput:
        kind, found = service.show_links(memory, principal.tenant_id, args.target)
        rows = [
            {**x.link.model_dump(mode="json"), "session": x.summary.as_json() if x.summary else None}
            for x in found
        ]
        lines = [f"{len(rows)} link(s) of {kind} {args.target}, newest first:"] + [
            f"- {r['linked_at'][:10]} {r['item'] if kind == 'session' else r['session_id']} ({r['origin']})"
            + (
                f" [{r['session']['outcome']}] {r['session']['problem']} (resume: {r['session']['resume']})"
                if r["session"]
                else ""
            )
            for r in rows
        ]
        return budgeted("\n".join(lines), {"kind": kind, "links": rows}, "links")

    return [
        Tool.from_model(
            SearchArguments,
            search,
            name="history_search",
            title="Which past sessions mentioned a topic",
            description=(
                "Answer 'did we already discuss X?': the sessions whose prompts, replies or closing summaries "
                "mention every word of the topic, best first, each with its date, how often it mentions the "
                "topic, a snippet, its outcome and the command to resume it. Start here, then use "
                "history_thread or history_query on the sessions found."
            ),
            result=Found,
        ),
        Tool.from_model(
            ThreadArguments,
            thread,
            name="history_thread",
            title="The thread on a topic as one document",
            description=(
                "The complete thread on a topic: matching sessions oldest first, each with its decisions, the "
                "prompts that mention the topic (with the tool uses and web searches each led to, one line "
                "each, and the reply) and its closing summary, cut to max_chars and saying so when cut; "
                "more_sessions counts matching sessions left out."
            ),
            result=Thread,
        ),
        Tool.from_model(
            QueryArguments,
            query,
            name="history_query",
            title="Matches with surrounding turns",
            description="Matches of a topic with `context` turns on each side, for a date range or one session (JSON).",
            result=Found,
        ),
        Tool.from_model(
            TopicArguments,
            decisions,
            name="history_decisions",
            title="What was decided about a topic",
            description=(
                "Candidate decisions about a topic, newest first: the key decisions of matching sessions' cards, "
                "then decision language in their prompts and summaries, each with date, session and context. "
                "When several fit, ask the user which one they mean."
            ),
            result=Decisions,
        ),
        Tool.from_model(
            TimelineArguments,
            timeline,
            name="history_timeline",
            title="Sessions per day",
            description="What was worked on: sessions per day with their problem line and outcome, for an ISO week (2026-W30) or a date range.",
            result=Timeline,
        ),
        Tool.from_model(
            LinkArguments,
            link,
            name="link_work_item",
            title="Link a session to a tracked work item",
            description=(
                "Record that a session (usually the current one: its session id) works on a tracked item: a "
                "GitHub issue or PR URL or #123, a key like ENT-297, or a Beads id. Appends; earlier links stay. "
                "Beads epics are refused: link a task."
            ),
            result=Link,
            annotations=dict(WRITE_ANNOTATIONS),
            required_scope=WRITE,
        ),
        Tool.from_model(
            TargetArguments,
            links,
            name="work_item_sessions",
            title="Sessions of a work item, or items of a session",
            description=(
                "Reverse lookups: given a work item (#123, ENT-297, a Beads id, a URL) its sessions newest first "
                "with their cards and resume commands; given a session id its linked items."
            ),
            result=Links,
        ),
    ]
