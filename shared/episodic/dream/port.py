"""The dream's ports: `DreamArchive` (where weekly records live; locally `archive.LocalArchive`, on AWS
`aws.dream_archive.S3Archive`) and `DreamModel` (the LLM call; Claude Code in `llm`, Bedrock in
`aws.dream_llm`). The week's sessions come through `source.WeekSource`.

Per week `<week>.md` (the record) and `<week>.synthesis.md` (the hand-off); `<week>.survey.md` only when
asked (the survey is regenerable). Records are dated and kept; a week is rewritten only with force.
An archive adapter only lists, reads and writes named files; locating weeks and parsing records is done
here, once, for the dream and the viewer alike.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from episodic.dream.record import ParsedRecord, parse_record, read_record_file
from episodic.dream.weeks import IsoWeek

Kind = Literal["record", "synthesis", "survey"]
_SUFFIX: dict[str, str] = {"record": ".md", "synthesis": ".synthesis.md", "survey": ".survey.md"}
_RECORD_NAME_RE = re.compile(r"^(\d{4}-W\d{2})\.md$")
SHOWN_SUFFIXES = (".json", ".md", ".jsonl")  # what a folder of records may hold (the viewer's --dream DIR)


def file_name(week: IsoWeek, kind: Kind) -> str:
    return f"{week}{_SUFFIX[kind]}"


@dataclass(frozen=True)
class StoredFile:
    name: str
    size: int
    modified: float  # seconds since the epoch


@dataclass
class Shelf:
    """The records an archive shows, newest first, and why any file could not be shown."""

    records: list[ParsedRecord] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


class DreamArchive(ABC):
    @abstractmethod
    def files(self, tenant_id: str) -> list[StoredFile]:
        """Every file of the tenant's records (records, syntheses, surveys), in no order."""

    @abstractmethod
    def read_file(self, tenant_id: str, name: str) -> str | None: ...

    @abstractmethod
    def write_file(self, tenant_id: str, name: str, text: str) -> str:
        """Store the text; returns where it went (a path or an s3:// URL)."""

    def weeks(self, tenant_id: str) -> list[IsoWeek]:
        """The weeks that have a record, oldest first."""
        found = [m[1] for f in self.files(tenant_id) if (m := _RECORD_NAME_RE.match(f.name))]
        return sorted(IsoWeek.parse(w) for w in found)

    def read(self, tenant_id: str, week: IsoWeek, kind: Kind = "record") -> str | None:
        return self.read_file(tenant_id, file_name(week, kind))

    def write(self, tenant_id: str, week: IsoWeek, kind: Kind, text: str) -> str:
        return self.write_file(tenant_id, file_name(week, kind), text)

    def records(self, tenant_id: str, weeks: list[IsoWeek] | None = None) -> list[ParsedRecord]:
        """The weekly records (all, or those of the weeks given), oldest first."""
        chosen = self.weeks(tenant_id)
        if weeks:
            wanted = set(weeks)
            chosen = [w for w in chosen if w in wanted]
        return [parse_record(text) for w in chosen if (text := self.read(tenant_id, w))]

    def shelf(self, tenant_id: str, most: int, max_bytes: int) -> Shelf:
        """Every record file (JSON or markdown), newest first, at most `most`; larger than `max_bytes` or
        not parseable, a file is named in `unreadable` instead."""
        shown = [f for f in self.files(tenant_id) if Path(f.name).suffix in SHOWN_SUFFIXES]
        shelf = Shelf()
        for stored in sorted(shown, key=lambda f: f.modified, reverse=True)[:most]:
            if stored.size > max_bytes:
                shelf.unreadable.append(f"{stored.name}: larger than {max_bytes} bytes")
                continue
            text = self.read_file(tenant_id, stored.name)
            if text is None:  # removed since it was listed
                continue
            try:
                shelf.records.append(read_record_file(stored.name, text))
            except ValueError as exc:
                shelf.unreadable.append(f"{stored.name}: {exc}")
        return shelf


class DreamModel(ABC):
    """One structured call: a system prompt, a user prompt and a JSON schema the answer must satisfy."""

    id: str

    @abstractmethod
    def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
        """The parsed JSON answer; raise any exception (its message is the phase's failure reason)."""
