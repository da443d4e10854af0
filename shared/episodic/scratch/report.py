"""Extraction over a folder of transcripts without storing anything: how many records, the share `fail`,
what the no-diff/no-trace check dropped, and samples (`episodic scratch extract`, the README's figures)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from episodic.kernel.models import NotEpisode
from episodic.kernel.ports import TranscriptSource
from episodic.scratch.check import summary_problems
from episodic.scratch.extract import DEFAULT_MAX_PER_SESSION, extract_outcomes
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scrub import Scrubber


@dataclass
class ExtractionReport:
    sessions: int = 0
    sessions_with_records: int = 0
    candidates: int = 0
    records: list[ScratchRecord] = field(default_factory=list)
    dropped: list[tuple[str, list[str]]] = field(default_factory=list)
    by_tool: Counter[str] = field(default_factory=Counter)
    check_failures: int = 0  # stored records that fail the check again (must be 0)
    skipped: Counter[str] = field(default_factory=Counter)  # files that are no episode, by reason

    @property
    def fail_share(self) -> float:
        return sum(r.outcome is ToolOutcome.FAIL for r in self.records) / max(len(self.records), 1)

    def as_dict(self, samples: int = 20, seed: int = 17) -> dict[str, Any]:
        picked = random.Random(seed).sample(self.records, min(samples, len(self.records)))
        return {
            "sessions": self.sessions,
            "sessions_with_records": self.sessions_with_records,
            "candidates": self.candidates,
            "records": len(self.records),
            "fail_share": round(self.fail_share, 3),
            "by_tool": dict(self.by_tool.most_common()),
            "dropped_by_check": len(self.dropped),
            "stored_records_failing_check": self.check_failures,
            "skipped": dict(self.skipped.most_common()),
            "samples": [f"[{r.outcome.value}][{r.tool_name}] {r.summary}" for r in picked],
        }


def extraction_report(
    source: TranscriptSource,
    paths: Sequence[str],
    scrubber: Scrubber,
    tenant_id: str,
    max_per_session: int = DEFAULT_MAX_PER_SESSION,
) -> ExtractionReport:
    report = ExtractionReport()
    for found in source.discover(paths):
        loaded = source.load(found)
        if isinstance(loaded, NotEpisode):
            report.skipped[loaded.reason] += 1
            continue
        report.sessions += 1
        extraction = extract_outcomes(loaded, tenant_id, scrubber, max_records=max_per_session)
        report.candidates += extraction.candidates
        report.dropped += extraction.dropped
        report.records += extraction.records
        report.sessions_with_records += bool(extraction.records)
        for record in extraction.records:
            report.by_tool[record.tool_name] += 1
            report.check_failures += bool(summary_problems(record.summary, scrubber))
    return report
