"""The eval and dream pages' data: the latest `episodic eval --report` folder (report.md + chart.png) and a
folder of dream records (JSON or Markdown files, read through the dream's archive), each shown as it is,
or a clear empty state."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from episodic.dream.archive import FolderArchive
from episodic.dream.record import ParsedRecord
from episodic.evaluation.report import CHART_NAME, REPORT_NAME
from episodic.ui.render import home_relative

MAX_RECORD_BYTES = 512 * 1024
MAX_RECORDS = 200


# a report section longer than this (table rows plus list items) opens folded: the per-query ranks and
# the list of all pairs would otherwise make the page tens of thousands of pixels tall
FOLDED_OVER = 20


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Bullets:
    items: list[str]


Block = str | Table | Bullets


@dataclass
class Section:
    title: str
    level: int
    blocks: list[Block] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Its rows and list items: how long it reads."""
        return sum(
            len(b.rows) if isinstance(b, Table) else len(b.items) if isinstance(b, Bullets) else 0
            for b in self.blocks
        )

    @property
    def folded(self) -> bool:
        return self.size > FOLDED_OVER


@dataclass
class EvalReport:
    folder: str = ""
    intro: list[Block] = field(default_factory=list)  # what precedes the first section (command, corpus)
    sections: list[Section] = field(
        default_factory=list
    )  # the first one is the results, shown with the chart
    has_chart: bool = False
    missing: str = ""


def _plain(text: str) -> str:
    """Markdown emphasis and code marks dropped (the page shows text; the template escapes it)."""
    return re.sub(r"\*\*|`", "", text).strip()


def _cells(line: str) -> list[str]:
    return [_plain(cell) for cell in line.strip().strip("|").split("|")]


def markdown_blocks(lines: list[str]) -> list[Block]:
    """Markdown lines as paragraphs, tables and lists (the only shapes `evaluation.report` writes)."""
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|-: "):
            table = Table(_cells(line), [])
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                table.rows.append(_cells(lines[i]))
                i += 1
            blocks.append(table)
            continue
        if line.lstrip().startswith("- "):
            last = blocks[-1] if blocks else None
            if not isinstance(last, Bullets):
                last = Bullets([])
                blocks.append(last)
            last.items.append(_plain(line.lstrip()[2:]))
        elif line.strip():
            blocks.append(_plain(line))
        i += 1
    return blocks


def markdown_sections(text: str) -> tuple[list[Block], list[Section]]:
    """The report cut at its `##`/`###` headings: what comes before the first, and each section (the
    `#` title is the page's own heading)."""
    intro: list[str] = []
    cuts: list[tuple[str, int, list[str]]] = []
    for line in text.splitlines():
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        if heading and len(heading[1]) == 1:
            continue
        if heading:
            cuts.append((_plain(heading[2]), len(heading[1]), []))
        else:
            (cuts[-1][2] if cuts else intro).append(line)
    sections = [Section(title, level, markdown_blocks(body)) for title, level, body in cuts]
    return markdown_blocks(intro), sections


def eval_report(folder: Path | None, home: str | None = None) -> EvalReport:
    shown = home_relative(folder, home) if folder else ""
    if folder is None or not (folder / REPORT_NAME).is_file():
        where = f" in {shown}" if folder else ""
        return EvalReport(
            folder=shown,
            missing=f"No eval report{where}. Run `episodic eval ... --report DIR` and start the viewer "
            "with `--eval-report DIR`.",
        )
    text = (folder / REPORT_NAME).read_text(encoding="utf-8", errors="replace")
    intro, sections = markdown_sections(text)
    return EvalReport(shown, intro, sections, (folder / CHART_NAME).is_file())


def eval_chart(folder: Path) -> bytes | None:
    path = folder / CHART_NAME
    return path.read_bytes() if path.is_file() else None


@dataclass
class DreamPage:
    folder: str = ""
    records: list[ParsedRecord] = field(default_factory=list)
    missing: str = ""
    unreadable: list[str] = field(default_factory=list)


def dream_records(folder: Path | None, tenant_id: str, home: str | None = None) -> DreamPage:
    """Every dream record in the folder, newest file first; an empty state when there is none."""
    shown = home_relative(folder, home) if folder else ""
    if folder is None or not folder.is_dir():
        where = f" at {shown}" if folder else ""
        return DreamPage(
            folder=shown,
            missing=f"No dream records{where}: consolidation has not run yet, or writes them elsewhere "
            "(start the viewer with `--dream DIR`).",
        )
    shelf = FolderArchive(folder).shelf(tenant_id, MAX_RECORDS, MAX_RECORD_BYTES)
    page = DreamPage(shown, shelf.records, unreadable=shelf.unreadable)
    if not page.records and not page.unreadable:
        page.missing = f"The dream folder {shown} holds no records yet."
    return page
