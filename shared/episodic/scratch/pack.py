"""Packing recalled outcomes for a prompt: a heading, 3-5 bullets of at most 200 characters, a closing line.

`- [fail][typecheck] typecheck failed on middleware.ts — error TS2304: … (session 3f2a…)`. The whole block
stays under a hard token cap (estimated at 4 characters a token); bullets that do not fit are dropped, never
cut into the closing line. Nothing recalled: no block at all (silence beats noise).
"""

from __future__ import annotations

from episodic.scratch.models import K_MAX, ScratchHit

MAX_BULLET_CHARS = 200
MAX_TOKENS = 300
CHARS_PER_TOKEN = 4
CLOSING = "Use these as hints; verify against the current tree before re-applying patches."


def heading(ttl_days: int) -> str:
    return f"## Prior similar attempts (tenant-scoped, last {ttl_days}d)"


def bullet(hit: ScratchHit) -> str:
    record = hit.record
    head = f"- [{record.outcome.value}][{record.tool_name}] "
    tail = f" (session {record.session_id})"
    room = MAX_BULLET_CHARS - len(head) - len(tail)
    summary = " ".join(record.summary.split())
    if len(summary) > room:
        summary = summary[: max(room - 1, 0)].rstrip() + "…"
    return (head + summary + tail)[:MAX_BULLET_CHARS]


def pack_recalls(hits: list[ScratchHit], ttl_days: int, max_tokens: int = MAX_TOKENS) -> str:
    """The block, or '' when nothing was recalled or not even one bullet fits the cap."""
    budget = max_tokens * CHARS_PER_TOKEN
    lines = [heading(ttl_days)]
    fixed = len(lines[0]) + 1 + len(CLOSING)
    for hit in hits[:K_MAX]:
        line = bullet(hit)
        if fixed + sum(len(x) + 1 for x in lines[1:]) + len(line) + 1 > budget:
            break
        lines.append(line)
    if len(lines) == 1:
        return ""
    return "\n".join([*lines, CLOSING])
