"""A scrubbed trajectory made into its history record (what was said and touched, never tool output)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from episodic.distill.heuristic_steps import WEB_TOOLS
from episodic.history.models import HistoryRecord, ToolOutcome, ToolUse, Turn

if TYPE_CHECKING:
    from episodic.kernel.models import ToolCall, Trajectory
    from episodic.scrub import Scrubber

REPLY_CHARS = 1500  # an assistant reply is kept as context around a prompt, not as the record itself
SUMMARY_CHARS = 6000  # the closing summary and each compaction summary
PROMPT_CHARS = 20_000  # a prompt is kept in full up to this (a pasted log beyond it is not a prompt)
MAX_FILES = 200
TARGET_CHARS = 160  # a tool use is one line
MAX_TOOLS_PER_TURN = 300
# where a tool's target is, first found wins (a command's first line is taken before these)
TARGET_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "query",
    "url",
    "pattern",
    "description",
    "absolute_path",
)


def tool_use(call: ToolCall) -> ToolUse:
    """A tool call as one line: never its output, only what it acted on and how it ended."""
    target = call.command or call.file_path or ""
    if not target:
        target = next((str(call.input[k]) for k in TARGET_KEYS if call.input.get(k)), "")
    target = " ".join(target.strip().splitlines()[:1][0].split()) if target.strip() else ""
    if len(target) > TARGET_CHARS:
        target = target[: TARGET_CHARS - 1] + "…"
    outcome: ToolOutcome = "ok"
    if call.rejected:
        outcome = "rejected"
    elif call.interrupted:
        outcome = "interrupted"
    elif call.is_error or (call.exit_code or 0) != 0:
        outcome = "error"
    return ToolUse(
        tool=call.name, target=target, outcome=outcome, web=call.name in WEB_TOOLS, at=call.timestamp
    )


def _turns(trajectory: Trajectory) -> list[Turn]:
    """Main-thread prompts in order, each with the assistant's last text before the next prompt."""
    turns: list[Turn] = []
    for event in trajectory.events:
        if event.agent_id is not None:  # a folded subagent's turn is not the user's conversation
            continue
        if event.kind == "prompt":
            turns.append(Turn(index=len(turns), prompt=event.text[:PROMPT_CHARS], at=event.timestamp))
        elif event.kind == "assistant" and turns and event.text.strip():
            turns[-1].reply = event.text[:REPLY_CHARS]
        elif event.kind == "tool" and event.tool and turns and len(turns[-1].tools) < MAX_TOOLS_PER_TURN:
            turns[-1].tools.append(tool_use(event.tool))
    if not turns:  # a format whose events carry no prompts: the trajectory's list is the truth
        turns = [Turn(index=i, prompt=p[:PROMPT_CHARS]) for i, p in enumerate(trajectory.prompts)]
    return turns


def _subagents(trajectory: Trajectory) -> list[str]:
    launched = []
    for call in trajectory.tool_calls:
        if call.name in ("Task", "Agent") and call.agent_id is None:
            kind = str(call.input.get("subagent_type") or "agent")
            what = str(call.input.get("description") or "")[:200]
            launched.append(f"{kind}: {what}" if what else kind)
    return launched


def history_record(trajectory: Trajectory, tenant_id: str, scrubber: Scrubber) -> HistoryRecord:
    """The session's history record; every text scrubbed again here (the parser scrubbed it once: a
    history record keeps prompts in full, so it takes no chance on a rule the parse step skipped)."""
    clean = scrubber.scrub
    turns = [
        turn.model_copy(
            update={
                "prompt": clean(turn.prompt),
                "reply": clean(turn.reply),
                "tools": [t.model_copy(update={"target": clean(t.target)}) for t in turn.tools],
            }
        )
        for turn in _turns(trajectory)
    ]
    touched = list(dict.fromkeys([*trajectory.files_edited, *trajectory.files_read]))[:MAX_FILES]
    return HistoryRecord(
        tenant_id=tenant_id,
        session_id=trajectory.session_id,
        source_sha256=trajectory.source_sha256,
        project=trajectory.project,
        cwd=clean(trajectory.cwd),
        git_branch=clean(trajectory.git_branch),
        agent=trajectory.agent,
        started_at=trajectory.started_at,
        ended_at=trajectory.ended_at,
        titles=[clean(t) for t in trajectory.titles],
        turns=turns,
        closing_summary=clean(trajectory.closing_summary[:SUMMARY_CHARS]),
        compact_summaries=[clean(s[:SUMMARY_CHARS]) for s in trajectory.compact_summaries],
        files_touched=[clean(p) for p in touched],
        files_edited=[clean(p) for p in trajectory.files_edited[:MAX_FILES]],
        tools_used=dict(Counter(call.name for call in trajectory.tool_calls).most_common()),
        subagents=[clean(s) for s in _subagents(trajectory)],
    )
