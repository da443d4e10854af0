"""`episodic dream --html`: the records of a range as one static page (no script, no external resource):
themes across weeks, the decisions timeline, unfinished threads and the flags, each with its citations."""

from __future__ import annotations

import html
import re

from episodic.dream.record import ParsedRecord, section_items

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2433;background:#f7f8fa}
h1{font-size:1.6rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:2rem 0 .6rem;border-bottom:2px solid #d5dae3}
.meta{color:#5a6478;font-size:.85rem}.weeks{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:.8rem}
.week{background:#fff;border:1px solid #d5dae3;border-radius:8px;padding:.7rem .9rem}
.week h3{margin:0 0 .3rem;font-size:1rem}.score{background:#1f6feb;color:#fff;border-radius:4px;padding:0 .35rem;font-size:.8rem}
ul,ol{margin:.2rem 0 .2rem 1.2rem;padding:0}li{margin:.25rem 0}.cite{color:#6b5bd2;font-size:.78rem;white-space:nowrap}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border:1px solid #d5dae3;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#eef1f6}.offline{color:#9a6700}
"""
_CITE_RE = re.compile(r"\[([A-Za-z0-9_.-]{1,8}) (\d{4}-\d{2}-\d{2}|undated)\]")
_SCORE_RE = re.compile(r"\(score (\d\.\d\d)\)")


def _line(text: str) -> str:
    """One claim as HTML: bold markers, the score as a badge, citations as small tags."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = _SCORE_RE.sub(r'<span class="score">\1</span>', out)
    return _CITE_RE.sub(r'<span class="cite">[\1 \2]</span>', out)


def _list(items: list[str], numbered: bool = False) -> str:
    if not items:
        return "<p class=meta>None.</p>"
    tag = "ol" if numbered else "ul"
    return f"<{tag}>" + "".join(f"<li>{_line(i)}</li>" for i in items) + f"</{tag}>"


def render_dashboard(records: list[ParsedRecord], tenant: str) -> str:
    weeks = [r.week for r in records]
    span = f"{weeks[0]} to {weeks[-1]}" if weeks else "no records"
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>Dreams {html.escape(span)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Dreaming cycle · {html.escape(tenant)} · {html.escape(span)}</h1>",
        f"<p class=meta>{len(records)} weekly record(s); every claim cites its sessions as [id date].</p>",
        "<h2>Themes across weeks</h2><div class=weeks>",
    ]
    for record in records:
        front = record.front
        mode = front.get("mode", "")
        parts.append(
            f"<div class=week><h3>{html.escape(record.week)}</h3><div class=meta>{html.escape(front.get('period', ''))}"
            f" · {html.escape(front.get('sessions_analysed', '?'))} sessions · "
            f"<span class={'offline' if mode == 'offline' else 'llm'}>{html.escape(mode)}</span></div>"
            f"{_list(section_items(record, 'themes'))}</div>"
        )
    parts.append("</div><h2>Decisions timeline</h2><table><tr><th>week</th><th>decision</th></tr>")
    for record in records:
        for item in section_items(record, "decisions"):
            parts.append(f"<tr><td>{html.escape(record.week)}</td><td>{_line(item)}</td></tr>")
    parts.append("</table><h2>Unfinished threads</h2>")
    for record in records:
        parts.append(f"<h3>{html.escape(record.week)}</h3>{_list(section_items(record, 'unfinished'))}")
    parts.append("<h2>Flags for review</h2>")
    for record in records:
        parts.append(
            f"<h3>{html.escape(record.week)}</h3>{_list(section_items(record, 'flags'), numbered=True)}"
        )
    parts.append("</body></html>")
    return "\n".join(parts)
