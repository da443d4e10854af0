"""Thread, advanced query, decisions and timeline: the history read as documents, each within a budget."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from episodic.history.models import HistoryFilters, ToolUse, Turn
from episodic.history.service import (
    MAX_LIMIT,
    HistoryHit,
    SessionSummary,
    counted_search,
    history_of,
    search_history,
    summarise,
)
from episodic.history.terms import query_terms, term_pattern
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import check_tenant

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

DEFAULT_THREAD_CHARS = 12_000
MAX_THREAD_CHARS = 60_000
TURN_CHARS = 1200  # one prompt or reply inside a thread
TOOLS_PER_TURN = 12  # tool-use lines of one prompt inside a thread (web searches are always shown)
TRUNCATED = "\n[… truncated to {limit} characters: narrow the topic or the dates, or raise max_chars]"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(summary: SessionSummary) -> str:
    r = summary.record
    branch = f" · branch {r.git_branch}" if r.git_branch else ""
    return (
        f"## {summary.date} · {r.project or 'no project'} · session {r.session_id}{branch}\n"
        f"Problem: {summary.problem}\nOutcome: {summary.outcome}\nResume: {summary.resume()}"
    )


@dataclass
class Document:
    text: str
    sessions: list[str] = field(default_factory=list)
    truncated: bool = False
    more: int = 0  # matching sessions left out of a thread (beyond its session limit)


def fit(blocks: list[str], max_chars: int) -> tuple[str, bool]:
    """Blocks joined in order while they fit; the one that does not is cut and the rest dropped, with a
    note saying so. The result never exceeds max_chars."""
    text = "\n\n".join(blocks)
    if len(text) <= max_chars:
        return text, False
    note = TRUNCATED.format(limit=max_chars)
    return text[: max(0, max_chars - len(note) - 1)].rstrip() + "…" + note, True


def check_max_chars(max_chars: int) -> int:
    if not 500 <= max_chars <= MAX_THREAD_CHARS:
        raise InvalidArgumentError(f"max_chars must be between 500 and {MAX_THREAD_CHARS}, got {max_chars}")
    return max_chars


def topic_thread(
    memory: Memory,
    tenant_id: str,
    topic: str,
    filters: HistoryFilters | None = None,
    max_chars: int = DEFAULT_THREAD_CHARS,
    limit: int = 20,
) -> Document:
    """The thread on a topic: matching sessions in time order, each with its decisions, the prompts that
    mention the topic (the tool uses and web searches each led to, one line each, and the reply), and its
    closing summary; cut to `max_chars`. When more sessions matched than `limit`, the header says how many
    more."""
    check_max_chars(max_chars)
    hits, total = counted_search(memory, tenant_id, topic, filters, limit)
    hits.sort(
        key=lambda h: (h.summary.record.started_at or datetime.min.replace(tzinfo=UTC), h.match.session_id)
    )
    more = total - len(hits)
    cut = (
        f"; {'at least ' if total >= MAX_LIMIT else ''}{more} more session(s) matched and are not shown: "
        "narrow the topic or the dates"
        if more > 0
        else ""
    )
    blocks = [f"# Thread: {topic} ({len(hits)} session(s), oldest first{cut})"]
    for hit in hits:
        lines = [_header(hit.summary)]
        card = hit.summary.card
        if card is not None and card.card.key_decisions:
            lines.append("Decisions: " + "; ".join(card.card.key_decisions))
        turns = hit.summary.record.turns
        for index in hit.match.turns:
            turn = turns[index]
            lines.append(f"> prompt {index + 1}: {_cut(turn.prompt, TURN_CHARS)}")
            lines += tool_lines(turn.tools)
            if turn.reply:
                lines.append(f"  reply: {_cut(turn.reply, TURN_CHARS)}")
        if hit.summary.record.closing_summary:
            lines.append(f"Closing summary: {_cut(hit.summary.record.closing_summary, TURN_CHARS)}")
        blocks.append("\n".join(lines))
    text, truncated = fit(blocks, max_chars)
    return Document(text, [h.match.session_id for h in hits], truncated or more > 0, max(more, 0))


def tool_lines(uses: list[ToolUse], most: int = TOOLS_PER_TURN) -> list[str]:
    """A turn's tool uses in order, one line each: every web search, the first `most` others, and a line
    counting those left out (a long turn would otherwise crowd the other sessions out of the thread)."""
    shown, others, left = [], 0, 0
    for use in uses:
        if use.web or others < most:
            shown.append(tool_line(use))
            others += not use.web
        else:
            left += 1
    return shown + (
        [f"  - … {left} more tool use(s): `episodic history show` lists them all"] if left else []
    )


def tool_line(use: ToolUse) -> str:
    """`  - web search: "query"` or `  - Edit src/app.py (error)`: one line per tool use."""
    outcome = "" if use.outcome == "ok" else f" ({use.outcome})"
    if use.web:
        return f"  - web {'search' if 'search' in use.tool.lower() else 'fetch'}: {use.target}{outcome}"
    return f"  - {use.tool} {use.target}".rstrip() + outcome


def query_history(
    memory: Memory,
    tenant_id: str,
    query: str,
    filters: HistoryFilters | None = None,
    context: int = 1,
    limit: int = 20,
) -> list[dict[str, object]]:
    """Matches with `context` surrounding turns on each side, per session (JSON-ready)."""
    if not 0 <= context <= 10:
        raise InvalidArgumentError(f"context must be between 0 and 10 turns, got {context}")
    out = []
    for hit in search_history(memory, tenant_id, query, filters, limit):
        turns = hit.summary.record.turns
        wanted = sorted(
            {i for t in hit.match.turns for i in range(t - context, t + context + 1) if 0 <= i < len(turns)}
        )
        out.append(
            {
                **hit.as_json(),
                "context": [
                    {
                        "turn": i,
                        "matched": i in hit.match.turns,
                        "at": _iso(turns[i].at),
                        "prompt": turns[i].prompt,
                        "reply": turns[i].reply,
                    }
                    for i in wanted
                ],
            }
        )
    return out


# ---------------------------------------------------------------- decisions

# a decision says a choice was made; "instead of" / "rather than" count only beside a choosing verb
DECISION_WORDS = re.compile(
    r"\b(decided|decision was|we(?:'ll| will) (?:go with|use|keep|stick with|switch to)|"
    r"let'?s (?:go with|use|keep|stick with|switch to)|(?<!keep )going with|(?<!keep )go with|settled on|chose|chosen|"
    r"agreed (?:to|on)|opted)\b",
    re.IGNORECASE,
)
CONTRAST_CHOICE = re.compile(
    r"\b(?:use|using|keep|keeping|switch(?:ed)? to|move[sd]? to|pick(?:ed)?|went with|we(?:'ll| will)|"
    r"let'?s|I'll)\b[^.!?]{0,80}?"
    r"\b(?:instead of|rather than)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Decision:
    text: str
    source: str  # card | prompt | reply | summary
    session: SessionSummary
    context: str = ""

    def as_json(self) -> dict[str, object]:
        return {
            "decision": self.text,
            "source": self.source,
            "context": self.context,
            "date": self.session.date,
            "session_id": self.session.record.session_id,
            "project": self.session.record.project,
            "resume": self.session.resume(),
        }


# a review's finding ("Medium: tests use X instead of Y") reports what is, it does not choose
FINDING = re.compile(r"^\W*(?:critical|high|medium|low|minor|major|nit|issue|bug)\b\W*:", re.IGNORECASE)


def is_decision(sentence: str) -> bool:
    return (
        len(sentence.strip()) > 10
        and not FINDING.match(sentence)
        and bool(DECISION_WORDS.search(sentence) or CONTRAST_CHOICE.search(sentence))
    )


def _decision_sentences(text: str, pattern: re.Pattern[str] | None) -> list[str]:
    """Decision sentences of `text`; with `pattern`, only those naming the topic (text not about it)."""
    return [
        _cut(s, 400)
        for s in _SENTENCE.split(text)
        if is_decision(s) and (pattern is None or pattern.search(s))
    ]


def find_decisions(
    memory: Memory, tenant_id: str, topic: str, filters: HistoryFilters | None = None, limit: int = 10
) -> tuple[list[Decision], str]:
    """Decisions about a topic, newest first, each once, with its session and date. A decision counts when
    its sentence names the topic or sits in a turn about it (a prompt naming the topic, and its reply):
    decision language (a choice made, not "should" or a bare "instead") in the topic's prompts and replies,
    and in a closing summary naming the topic. A card's key decision counts when it names the topic or is said in a turn about it.
    The message asks back when several fit."""
    hits: list[HistoryHit] = search_history(memory, tenant_id, topic, filters, 50)
    pattern = term_pattern(query_terms(topic))
    found: list[Decision] = []
    for hit in sorted(
        hits, key=lambda h: h.summary.record.started_at or datetime.min.replace(tzinfo=UTC), reverse=True
    ):
        summary, record = hit.summary, hit.summary.record
        card = summary.card
        if card is not None:
            on_topic = _folded(
                " ".join(record.turns[i].prompt + " " + record.turns[i].reply for i in hit.match.turns)
            )
            # the offline distiller gathers any sentence with "instead" (a pasted tool message too): its
            # decisions must read as a choice made; a model's key decisions are taken as written
            loose = card.distiller.kind == "heuristic"
            found += [
                Decision(_cut(d, 400), "card", summary, _said_where(record.turns, d) or card.card.problem)
                for d in card.card.key_decisions
                if (pattern.search(d) or _folded(d) in on_topic) and (not loose or is_decision(d))
            ]
        for index in hit.match.turns:
            turn = record.turns[index]
            for sentence in _decision_sentences(turn.prompt, None):
                found.append(Decision(sentence, "prompt", summary, _cut(turn.reply, 300)))
            for sentence in _decision_sentences(turn.reply, None):
                found.append(Decision(sentence, "reply", summary, _cut(turn.prompt, 300)))
        for sentence in _decision_sentences(record.closing_summary, pattern):
            found.append(Decision(sentence, "summary", summary))
    found = _once_each(_unique(found)[:limit])
    if not found:
        return [], f"No decision about {topic!r} was found in the history."
    if len({d.session.record.session_id for d in found}) > 1 or len(found) > 1:
        return found, (
            f"{len(found)} candidate decisions about {topic!r} (newest first). Which one do you mean? "
            "Name its date or session to see its thread."
        )
    return found, f"One decision about {topic!r} was found."


def _folded(text: str) -> str:
    """Text compared without case, spacing or punctuation."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _said_where(turns: Sequence[Turn], decision: str) -> str:
    """The prompt of the turn whose reply said `decision` (or the reply, when the prompt said it)."""
    wanted = set(_folded(decision).split())
    if not wanted:
        return ""
    for turn in turns:  # a card rewords a little (code spans dropped): most of its words, not all
        if len(wanted & set(_folded(turn.reply).split())) >= 0.8 * len(wanted):
            return _cut(turn.prompt, 300)
        if len(wanted & set(_folded(turn.prompt).split())) >= 0.8 * len(wanted):
            return _cut(turn.reply, 300)
    return ""


def _once_each(decisions: list[Decision]) -> list[Decision]:
    """A context shown once: a later decision of the same session with the same context carries none."""
    shown: set[tuple[str, str]] = set()
    for d in decisions:
        key = (d.session.record.session_id, _folded(d.context))
        if key in shown:
            d.context = ""
        shown.add(key)
    return decisions


def _unique(decisions: list[Decision]) -> list[Decision]:
    """The first (newest) of each decision said more than once: case, spacing and punctuation aside, and a
    card's rewording of a reply's sentence (code spans dropped) counts as the same one."""
    seen: list[set[str]] = []
    kept = []
    for d in decisions:
        words = set(_folded(d.text).split())
        if not any(_same_words(words, other) for other in seen):
            seen.append(words)
            kept.append(d)
    return kept


def _same_words(a: set[str], b: set[str]) -> bool:
    """Most of the shorter sentence's words are in the longer one (a rewording, not another decision)."""
    small = min(len(a), len(b))
    return a == b or (small >= 4 and len(a & b) >= 0.8 * small)


# ---------------------------------------------------------------- timeline


def week_range(week: str) -> tuple[datetime, datetime]:
    """`2026-W30` -> [Monday 00:00 UTC, next Monday)."""
    match = re.fullmatch(r"(\d{4})-?W(\d{1,2})", week.strip(), re.IGNORECASE)
    if not match:
        raise InvalidArgumentError(f"week must look like 2026-W30, got {week!r}")
    try:
        monday = date.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
    except ValueError as exc:
        raise InvalidArgumentError(f"no such ISO week: {week!r}") from exc
    start = datetime.combine(monday, datetime.min.time(), tzinfo=UTC)
    return start, start + timedelta(days=7)


def timeline(
    memory: Memory, tenant_id: str, filters: HistoryFilters | None = None
) -> list[tuple[str, list[SessionSummary]]]:
    """Sessions per day (oldest first), each with its problem line and outcome; undated ones last."""
    check_tenant(tenant_id)
    days: dict[str, list[SessionSummary]] = defaultdict(list)
    for record in history_of(memory).sessions(tenant_id, filters or HistoryFilters()):
        summary = summarise(memory, record)
        days[summary.date].append(summary)
    return sorted(days.items(), key=lambda item: (item[0] == "undated", item[0]))


def timeline_text(days: list[tuple[str, list[SessionSummary]]], max_chars: int) -> Document:
    blocks = []
    for day, sessions in days:
        lines = [f"## {day} ({len(sessions)} session(s))"]
        for s in sessions:
            at = s.record.started_at.strftime("%H:%M") if s.record.started_at else "--:--"
            lines.append(
                f"- {at} [{s.outcome}] {s.record.project}: {_cut(s.problem, 160)} ({s.record.session_id})"
            )
        blocks.append("\n".join(lines))
    text, truncated = fit(blocks or ["No sessions in this range."], max_chars)
    return Document(text, [s.record.session_id for _, ss in days for s in ss], truncated)
