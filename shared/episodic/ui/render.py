"""How the viewer turns stored text into page text: a card's one-line heading, a hit's confidence as the
agent meets it, and a dream record's markdown as HTML (markdown-it-py, raw HTML off, its front matter as
a small table and its citations as links to their episodes)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from markdown_it import MarkdownIt
from markupsafe import Markup

from episodic.dream.record import CITATION_RE, CITED_HEADING, ParsedRecord
from episodic.kernel.models import Confidence

HEADING_CHARS = 120  # a heading longer than this is cut at a word (the CSS ellipsis cuts it to the width)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LINE_MARKS = re.compile(r"^(?:#{1,6}\s+|[-*>]\s+|\d+[.)]\s+|\*\*|__)+")
_LIST_ITEM = re.compile(r"^(?:[-*>]\s+|\d+[.)]\s+)")
_FRONT = re.compile(r"^---\n.*?\n---\n", re.S)


def home_relative(path: str | Path, home: str | None) -> str:
    """A path under the user's home as `~/…` (shorter, and the page does not show the user's name);
    any other path as it is."""
    text = str(path)
    if not home or not text.startswith("/"):
        return text
    base = str(Path(home)).rstrip("/")
    return "~" + text[len(base) :] if text == base or text.startswith(base + "/") else text


def _first_paragraph(text: str) -> str:
    """The first paragraph of prose: headings skipped, a hard-wrapped line joined to the next, ended by a
    blank line or a list item."""
    block: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            if block:
                break
            continue
        starts_item = bool(_LIST_ITEM.match(line))
        if not line or (block and starts_item):
            if block:
                break
            continue
        block.append(_LINE_MARKS.sub("", line).strip(" *_`"))
    return " ".join(" ".join(block).split())


def card_heading(problem: str, limit: int = HEADING_CHARS) -> str:
    """The first sentence of a card's problem (of its first paragraph of prose, without markdown marks),
    cut at a word boundary to `limit` characters."""
    paragraph = _first_paragraph(problem) or " ".join(problem.replace("#", " ").split())
    first = _SENTENCE_END.split(paragraph, maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0].rstrip(",;:—-") + "…"


@dataclass(frozen=True)
class ConfidenceLabel:
    tier: str  # strong | weak | below
    says: str  # what the agent is given for it


CONFIDENCE_LABELS: dict[Confidence | None, ConfidenceLabel] = {
    Confidence.STRONG: ConfidenceLabel("strong", "The agent gets this card (search_traces)"),
    Confidence.WEAK: ConfidenceLabel(
        "weak", "The agent gets a one-line entry (search_traces), the hook a pointer"
    ),
    Confidence.FAINT: ConfidenceLabel(
        "faint", "The agent gets a one-line entry when it asks (search_traces); the hook says nothing"
    ),
    None: ConfidenceLabel("below", "Below the faint bar: the agent is not shown it"),
}


def confidence_label(confidence: Confidence | None) -> ConfidenceLabel:
    return CONFIDENCE_LABELS[confidence]


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # commonmark with tables; raw HTML is escaped and unsafe link schemes are refused by markdown-it itself
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _cite_links(html: str, cited: dict[str, str]) -> str:
    """`[1ecba475 2026-02-03]` as a link to that episode (a short id the record does not list stays text)."""

    def link(match: re.Match[str]) -> str:
        full = cited.get(match[1])
        if not full:
            return match[0]
        return f'<a class="cite" href="/episode/{quote(full, safe="")}">[{match[1]} {match[2]}]</a>'

    return CITATION_RE.sub(link, html)


def record_html(record: ParsedRecord) -> Markup:
    """A markdown record's body as HTML (its front matter is shown apart, as a table); a JSON record, which
    has no markdown, as preformatted text."""
    if record.name.endswith(".json"):
        return Markup("<pre>{}</pre>").format(record.text)
    body = _FRONT.sub("", record.text, count=1)
    main, marker, lists = body.partition(f"## {CITED_HEADING}")
    html = _markdown().render(main)
    if marker:  # the id list and the run's counters: there to verify, folded away from the reading
        folded = _markdown().render(marker + lists)
        html += (
            f'<details class="appendix"><summary>{CITED_HEADING} and run checks</summary>{folded}</details>'
        )
    return Markup(_cite_links(html, record.cited_sessions()))


# the files `episodic dream` writes beside a week's record (suffix, what the page calls it)
COMPANION_FILES: tuple[tuple[str, str], ...] = (
    (".synthesis.md", "hand-off synthesis"),
    (".survey.md", "survey"),
)


def _companion(name: str) -> tuple[int, str]:
    for rank, (suffix, kind) in enumerate(COMPANION_FILES, 1):
        if name.endswith(suffix):
            return rank, kind
    return 0, ""


def record_title(record: ParsedRecord) -> str:
    """A record's heading: its week with the sessions it read (a companion file: what it is), or the
    record's own title (a JSON record from another writer)."""
    if record.fields and record.title:
        return record.title
    rank, kind = _companion(record.name)
    week = record.front.get("week") or (record.name.split(".", 1)[0] if rank else "")
    if not week:
        return record.title or record.name
    if kind:
        return f"Week {week} · {kind}"
    sessions = record.front.get("sessions_analysed", "")
    return f"Week {week}" + (f" · {sessions} sessions" if sessions else "")


def listing_order(records: list[ParsedRecord]) -> list[ParsedRecord]:
    """Newest week first; in a week, the record, then its synthesis, then its survey."""
    by_kind = sorted(records, key=lambda r: _companion(r.name)[0])
    return sorted(by_kind, key=lambda r: r.front.get("week") or r.name.split(".", 1)[0], reverse=True)
