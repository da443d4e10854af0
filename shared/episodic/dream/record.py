"""The weekly record: front matter, fixed sections, every claim citing its sessions; markdown both ways.

A citation is `[<first 8 characters of the session id> <YYYY-MM-DD>]`; the record ends with the sessions it
cites (short id to full id) and the run's checks (the failure-mode counters), so a reader can verify it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, Field

# key, heading: the fixed sections, in the reference's order
SECTIONS: tuple[tuple[str, str], ...] = (
    ("narrative", "Narrative of the Week"),
    ("themes", "Recurring Themes"),
    ("decisions", "Key Decisions Made This Week"),
    ("unfinished", "Unfinished Threads"),
    ("insights", "Insights Worth Remembering"),
    ("projects", "Project Activity"),
    ("risks", "Risks"),
    ("flags", "Flags for Review"),
)
STATISTICS_HEADING = "Appendix: Statistics"  # the week's counts, kept out of the narrative
CITED_HEADING = "Sessions Cited"
CHECKS_HEADING = "Run Checks"
RECORD_TYPE = "dreaming-cycle"
NONE = "None this week"  # an empty section's line, with the reason when the week had sessions
CITATION_RE = re.compile(r"\[([A-Za-z0-9_.-]{1,8}) (\d{4}-\d{2}-\d{2}|undated)\]")
_FRONT_RE = re.compile(r"^---\n(.*?)\n---\n", re.S)


class Citation(BaseModel):
    session_id: str
    day: str  # YYYY-MM-DD or "undated"

    def render(self) -> str:
        return f"[{self.session_id[:8]} {self.day}]"


class Item(BaseModel):
    """One claim of a section, with the sessions it came from (and, for promoted threads, the score)."""

    text: str
    cites: list[Citation] = Field(default_factory=list)
    score: float | None = None
    day: str | None = None  # decisions are dated

    def render(self, numbered: int | None = None) -> str:
        prefix = f"{numbered}. " if numbered is not None else "- "
        day = f"{self.day}: " if self.day else ""
        score = f" (score {self.score:.2f})" if self.score is not None else ""
        cites = " ".join(c.render() for c in self.cites)
        return f"{prefix}{day}{self.text}{score} {cites}".rstrip()


class DreamRecord(BaseModel):
    week: str
    period: str
    sessions_analysed: int
    mode: str  # "offline" or "llm:<model id>"
    generated_at: str
    input_range: str  # the sessions read: started from `since` up to `until` (exclusive)
    newest_session: str | None = None
    survey_bytes: int = 0
    raw_bytes: int = 0
    sections: dict[str, list[Item]] = Field(default_factory=dict)
    statistics: list[Item] = Field(default_factory=list)  # the appendix: counts, gates, noise
    counters: dict[str, int] = Field(default_factory=dict)
    sessions: dict[str, str] = Field(default_factory=dict)  # short id -> full id of every session cited
    empty_reasons: dict[str, str] = Field(default_factory=dict)  # section key -> why it holds nothing

    def front_matter(self) -> dict[str, Any]:
        return {
            "week": self.week,
            "period": self.period,
            "sessions_analysed": self.sessions_analysed,
            "type": RECORD_TYPE,
            "mode": self.mode,
            "generated_at": self.generated_at,
            "input_range": self.input_range,
            "newest_session": self.newest_session or "none",
            "survey_bytes": self.survey_bytes,
            "raw_bytes": self.raw_bytes,
        }


def render_record(record: DreamRecord, headings: dict[str, str] | None = None) -> str:
    """The markdown; `headings` (from the exemplar) may retitle sections, never drop or reorder them."""
    titles = {**dict(SECTIONS), **(headings or {})}
    lines = ["---", *(f"{k}: {v}" for k, v in record.front_matter().items()), "---", ""]
    if record.mode == "offline":
        lines += ["> Offline record: written from the cards' fields and the survey, no language model.", ""]
    for key, _ in SECTIONS:
        lines.append(f"## {titles[key]}")
        items = record.sections.get(key, [])
        if not items:
            reason = record.empty_reasons.get(key)
            lines.append(f"- {NONE}: {reason}" if reason else f"- {NONE}.")
        elif key == "narrative":
            lines.append(" ".join(i.render()[2:] for i in items))
        else:
            numbered = key == "flags"
            lines += [item.render(n if numbered else None) for n, item in enumerate(items, 1)]
        lines.append("")
    if record.statistics:
        lines += [f"## {STATISTICS_HEADING}", *(item.render() for item in record.statistics), ""]
    lines.append(f"## {CITED_HEADING}")
    lines += [f"- {short} {full}" for short, full in sorted(record.sessions.items())] or ["- None."]
    lines += ["", f"## {CHECKS_HEADING}"]
    lines += [f"- {name}: {value}" for name, value in record.counters.items()]
    return "\n".join(lines).rstrip() + "\n"


@dataclass
class ParsedRecord:
    """A record read back from markdown (its front matter and the lines of each section by key); read from
    a file, also its name, its title and (a JSON record's) scalar fields."""

    front: dict[str, str]
    sections: dict[str, list[str]] = field(default_factory=dict)
    text: str = ""
    name: str = ""
    title: str = ""
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def week(self) -> str:
        return self.front.get("week", "")

    def citations(self) -> list[tuple[str, str]]:
        return CITATION_RE.findall(self.text)

    def cited_sessions(self) -> dict[str, str]:
        out = {}
        for line in self.sections.get("cited", []):
            parts = line.lstrip("- ").split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out


def _key_for(heading: str, headings: dict[str, str]) -> str:
    lowered = heading.strip().lower()
    for key, title in [*SECTIONS, *headings.items()]:
        if title.lower() == lowered:
            return key
    if lowered == STATISTICS_HEADING.lower():
        return "statistics"
    if lowered == CITED_HEADING.lower():
        return "cited"
    if lowered == CHECKS_HEADING.lower():
        return "checks"
    return lowered


def parse_record(text: str, headings: dict[str, str] | None = None) -> ParsedRecord:
    front: dict[str, str] = {}
    body = text
    match = _FRONT_RE.match(text)
    if match:
        for line in match[1].splitlines():
            if ":" in line:
                name, value = line.split(":", 1)
                front[name.strip()] = value.strip()
        body = text[match.end() :]
    parsed = ParsedRecord(front=front, text=text)
    current: str | None = None
    for line in body.splitlines():
        if line.startswith("## "):
            current = _key_for(line[3:], headings or {})
            parsed.sections[current] = []
        elif current and line.strip():
            parsed.sections[current].append(line.strip())
    return parsed


def read_record_file(name: str, text: str) -> ParsedRecord:
    """A stored file as a record: markdown parsed, titled by its file name; JSON (another writer's record)
    titled by its title, name or id, its scalar fields kept, its text pretty-printed. ValueError: not JSON."""
    stem, suffix = PurePath(name).stem, PurePath(name).suffix
    if suffix != ".json":
        return replace(parse_record(text), name=name, title=stem)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    title, fields = stem, {}
    if isinstance(data, dict):
        title = str(data.get("title") or data.get("name") or data.get("id") or stem)
        fields = {k: v for k, v in data.items() if isinstance(v, str | int | float) and k != "title"}
    pretty = json.dumps(data, indent=1, ensure_ascii=False)
    front = {k: str(v) for k, v in fields.items()}
    return ParsedRecord(front=front, text=pretty, name=name, title=title, fields=fields)


def section_items(parsed: ParsedRecord, key: str) -> list[str]:
    """A section's claims without list markers ("None this week…" is no claim)."""
    out = []
    for line in parsed.sections.get(key, []):
        text = re.sub(r"^(?:- |\d+\. )", "", line)
        if text and not text.startswith(NONE):
            out.append(text)
    return out


_SCORE_RE = re.compile(r"\s*\(score [0-9.]+\)")


def item_title(text: str) -> str:
    """An earlier record's theme or unfinished line without its citations, score and summary."""
    body = _SCORE_RE.sub("", text.split(" [", 1)[0])
    if body.startswith("**") and "**" in body[2:]:
        return body[2:].split("**", 1)[0]
    return body.split(": its last session", 1)[0]  # an unfinished thread: its title
