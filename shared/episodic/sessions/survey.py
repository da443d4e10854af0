"""A compact plain-text survey of a trajectory for an LLM distiller, held to a token budget.

Tokens are estimated as ceil(chars / 4) (English prose and code average 3.5-4.5 chars per token on
Claude's tokenizer; the budget is a guide for the prompt size, not a billing figure). When the full
survey is over budget, the middle goes first: thinking, then the middle of the tool-call sequence and
of the later prompts; errors (cut head+tail) and the last command results are always kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from episodic.kernel.models import ToolCall, Trajectory
from episodic.parse.text import cut_middle

CHARS_PER_TOKEN = 4
_TEST_RE = re.compile(r"\b(?:test|pytest|jest|vitest|spec|check|lint|build|tsc|mypy|ruff|clippy|vet)\b", re.I)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class _Plan:
    calls: int = 10**9  # tool-sequence lines kept (a third from the start, the rest from the end)
    prompts: int = 10**9  # later prompts kept (head and tail)
    thinking: int = 10**9
    summaries: int = 10**9
    errors: int = 10**9
    text_chars: int = 3000  # request, each prompt, each compact summary, the closing summary
    error_chars: int = 1200
    result_chars: int = 800
    thinking_chars: int = 600


# Reductions in order: what a distiller misses least goes first.
_STEPS: tuple[tuple[str, int], ...] = (
    ("thinking_chars", 300),
    ("thinking", 0),
    ("calls", 40),
    ("prompts", 6),
    ("summaries", 2),
    ("text_chars", 1500),
    ("error_chars", 500),
    ("calls", 12),
    ("result_chars", 400),
    ("prompts", 2),
    ("summaries", 1),
    ("errors", 12),
    ("text_chars", 700),
    ("error_chars", 250),
    ("calls", 4),
    ("summaries", 0),
    ("prompts", 0),
    ("errors", 4),
    ("result_chars", 200),
)


def _describe(call: ToolCall, width: int = 160) -> str:
    if call.command:
        target = call.command.replace("\n", " ")
    elif call.file_path:
        target = call.file_path
    else:
        parts = [f"{k}={v}" for k, v in call.input.items() if isinstance(v, str | int | float | bool)]
        target = " ".join(parts).replace("\n", " ")
    target = target if len(target) <= width else target[: width - 1] + "…"
    agent = f"[agent {call.agent_id}] " if call.agent_id else ""
    return f"{agent}{call.name} {target}".rstrip()


def _status(call: ToolCall) -> str:
    if call.rejected:
        return "rejected by user"
    if call.interrupted:
        return "interrupted"
    if call.is_error or (call.exit_code not in (None, 0)):
        return f"error (exit {call.exit_code})" if call.exit_code not in (None, 0) else "error"
    return "ok" if call.exit_code is None else "exit 0"


def _middle_drop(items: list[str], keep: int, noun: str) -> list[str]:
    if len(items) <= keep:
        return items
    head = keep // 3
    tail = keep - head
    dropped = len(items) - keep
    return [*items[:head], f"… {dropped} {noun} omitted …", *(items[-tail:] if tail else [])]


def _last_results(traj: Trajectory) -> list[ToolCall]:
    """The last three shell results plus the last test/build run (kept whatever the budget)."""
    shell = [c for c in traj.tool_calls if c.command and not c.is_error]
    chosen = shell[-3:]
    tests = [c for c in shell if _TEST_RE.search(c.command or "")]
    if tests and tests[-1] not in chosen:
        chosen = [tests[-1], *chosen]
    return chosen


def _render(traj: Trajectory, plan: _Plan) -> str:
    out: list[str] = []
    dates = " → ".join(d.strftime("%Y-%m-%d %H:%M") for d in (traj.started_at, traj.ended_at) if d)
    out.append(f"SESSION project={traj.project or '?'} branch={traj.git_branch or '-'} {dates}".rstrip())
    out.append(
        f"tool calls: {len(traj.tool_calls)}, files edited: {len(traj.files_edited)}, "
        f"subagents: {len(traj.subagents)}"
    )
    if traj.titles:
        out.append("titles: " + " | ".join(traj.titles[:3]))
    out += ["", "REQUEST:", cut_middle(traj.request, plan.text_chars)]
    later = [f"- {cut_middle(p, plan.text_chars // 2)}" for p in traj.prompts[1:]]
    if later and plan.prompts:
        out += ["", "LATER PROMPTS:", *_middle_drop(later, plan.prompts, "prompts")]
    if traj.compact_summaries and plan.summaries:
        kept = traj.compact_summaries[-plan.summaries :]
        out += ["", "COMPACTION SUMMARIES (the session's own digest of earlier work):"]
        out += [cut_middle(s, plan.text_chars) for s in kept]
    errors = [(i, c) for i, c in enumerate(traj.tool_calls, 1) if c.is_error or c.exit_code not in (None, 0)]
    error_ids = {i for i, _ in errors}
    if traj.tool_calls:
        lines = [f"#{i} {_describe(c)} → {_status(c)}" for i, c in enumerate(traj.tool_calls, 1)]
        out += ["", "TOOL CALLS:", *_sequence(lines, error_ids, plan.calls)]
    if errors:
        shown = errors
        if len(errors) > plan.errors:  # the first error and the latest ones
            keep = max(plan.errors, 1)
            shown = errors[-1:] if keep == 1 else [errors[0], *errors[-(keep - 1) :]]
        out += ["", f"ERRORS ({len(errors)}{', some omitted' if len(shown) < len(errors) else ''}):"]
        for i, call in shown:
            out.append(f"#{i} {_describe(call, 120)} → {_status(call)}:")
            out.append(cut_middle(call.output.strip(), plan.error_chars))
    results = _last_results(traj)
    if results:
        out += ["", "LAST RESULTS:"]
        for call in results:
            out.append(f"$ {_describe(call, 200)} → {_status(call)}")
            out.append(cut_middle(call.output.strip(), plan.result_chars))
    if traj.thinking and plan.thinking:
        thoughts = [f"- {cut_middle(t, plan.thinking_chars)}" for t in traj.thinking]
        out += ["", "THINKING EXCERPTS:", *_middle_drop(thoughts, plan.thinking, "thoughts")]
    if traj.closing_summary:
        out += [
            "",
            "CLOSING SUMMARY (the assistant's last words):",
            cut_middle(traj.closing_summary, plan.text_chars),
        ]
    return "\n".join(out).strip() + "\n"


def _sequence(lines: list[str], error_ids: set[int], keep: int) -> list[str]:
    """Drop calls from the middle, but never an error line."""
    if len(lines) <= keep:
        return lines
    head = keep // 3
    tail_start = len(lines) - (keep - head)
    out = lines[:head]
    skipped = 0
    for number in range(head + 1, tail_start + 1):
        if number in error_ids:
            if skipped:
                out.append(f"… {skipped} calls omitted …")
                skipped = 0
            out.append(lines[number - 1])
        else:
            skipped += 1
    if skipped:
        out.append(f"… {skipped} calls omitted …")
    return out + lines[tail_start:]


def render_survey(traj: Trajectory, token_budget: int | None) -> str:
    """The survey within `token_budget` tokens (None or <= 0: unbounded). Deterministic."""
    plan = _Plan()
    text = _render(traj, plan)
    if not token_budget or token_budget <= 0 or estimate_tokens(text) <= token_budget:
        return text
    for name, floor in _STEPS:
        current = getattr(plan, name)
        low_plan = replace(plan, **{name: floor})
        if estimate_tokens(_render(traj, low_plan)) > token_budget:
            plan = low_plan  # not enough even at the floor: take the floor and go on
            continue
        # the largest value in [floor, current] that fits (binary search; the size grows with the value)
        ceiling = min(current, _natural_max(traj, name, current))
        lo, hi = floor, ceiling
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if estimate_tokens(_render(traj, replace(plan, **{name: mid}))) <= token_budget:
                lo = mid
            else:
                hi = mid - 1
        return _render(traj, replace(plan, **{name: lo}))
    text = _render(traj, plan)
    limit = token_budget * CHARS_PER_TOKEN
    return text if len(text) <= limit else cut_middle(text, limit)


def _natural_max(traj: Trajectory, name: str, current: int) -> int:
    sizes = {
        "calls": len(traj.tool_calls),
        "prompts": len(traj.prompts),
        "thinking": len(traj.thinking),
        "summaries": len(traj.compact_summaries),
        "errors": len(traj.tool_calls),
    }
    return min(current, sizes.get(name, current))
