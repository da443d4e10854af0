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

MAX_RECORD_BYTES = 512 * 1024
MAX_RECORDS = 200


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class EvalReport:
    folder: str = ""
    blocks: list[str | Table] = field(default_factory=list)  # paragraphs and tables, in order
    has_chart: bool = False
    missing: str = ""


def _plain(text: str) -> str:
    """Markdown emphasis and code marks dropped (the page shows text; the template escapes it)."""
    return re.sub(r"\*\*|`", "", text).strip()


def _cells(line: str) -> list[str]:
    return [_plain(cell) for cell in line.strip().strip("|").split("|")]


def markdown_blocks(text: str) -> list[str | Table]:
    """The report's markdown as paragraphs and tables (the only two shapes `evaluation.report` writes)."""
    blocks: list[str | Table] = []
    lines = text.splitlines()
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
        if line.strip():
            blocks.append(_plain(line.lstrip("#")))
        i += 1
    return blocks


def eval_report(folder: Path | None) -> EvalReport:
    if folder is None or not (folder / REPORT_NAME).is_file():
        where = f" in {folder}" if folder else ""
        return EvalReport(
            folder=str(folder or ""),
            missing=f"No eval report{where}. Run `episodic eval ... --report DIR` and start the viewer "
            "with `--eval-report DIR`.",
        )
    text = (folder / REPORT_NAME).read_text(encoding="utf-8", errors="replace")
    return EvalReport(str(folder), markdown_blocks(text), (folder / CHART_NAME).is_file())


def eval_chart(folder: Path) -> bytes | None:
    path = folder / CHART_NAME
    return path.read_bytes() if path.is_file() else None


@dataclass
class DreamPage:
    folder: str = ""
    records: list[ParsedRecord] = field(default_factory=list)
    missing: str = ""
    unreadable: list[str] = field(default_factory=list)


def dream_records(folder: Path | None, tenant_id: str) -> DreamPage:
    """Every dream record in the folder, newest file first; an empty state when there is none."""
    if folder is None or not folder.is_dir():
        where = f" at {folder}" if folder else ""
        return DreamPage(
            folder=str(folder or ""),
            missing=f"No dream records{where}: consolidation has not run yet, or writes them elsewhere "
            "(start the viewer with `--dream DIR`).",
        )
    shelf = FolderArchive(folder).shelf(tenant_id, MAX_RECORDS, MAX_RECORD_BYTES)
    page = DreamPage(str(folder), shelf.records, unreadable=shelf.unreadable)
    if not page.records and not page.unreadable:
        page.missing = f"The dream folder {folder} holds no records yet."
    return page
