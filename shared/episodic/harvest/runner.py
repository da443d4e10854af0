"""Wiring for the faces: a harvest job from settings, the spool drain, the last-run summary."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.harvest.harvest import (
    DEFAULT_MULTIPART_THRESHOLD,
    Harvester,
    HarvestReport,
    Outcome,
    select_sessions,
)
from episodic.harvest.spool import read_entries, remove_entries, uploader_lock
from episodic.harvest.state import STATE_FILE, HarvestState, resolve_bucket, write_last_run
from episodic.kernel.errors import ConfigError
from episodic.kernel.models import SessionSource
from episodic.kernel.ports import TranscriptSource
from episodic.kernel.settings import Settings


def kms_key_id(settings: Settings) -> str | None:
    """The KMS key for uploads; None lets the bucket's default encryption (the stack's key) apply."""
    return settings.kms_key_id or None


def build_s3_client(settings: Settings, profile: str | None = None) -> Any:
    """An S3 client from the standard credential chain (a named profile when given)."""
    from episodic.assembly import aws_client

    return aws_client(settings, "s3", profile)


@dataclass
class HarvestJob:
    harvester: Harvester
    report: HarvestReport
    sessions: list[SessionSource]

    def run(self, progress: Callable[[SessionSource], None] | None = None) -> HarvestReport:
        return self.harvester.run(self.sessions, self.report, progress)


def make_harvester(
    settings: Settings,
    *,
    s3_client: Any,
    bucket: str | None,
    tenant: str | None,
    dry_run: bool = False,
    source: TranscriptSource | None = None,
    scrubber: Any = None,
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
    clock: Callable[[], float] = time.time,
) -> Harvester:
    from episodic.assembly import build_scoped_source, build_scrubber

    if dry_run and not bucket and not settings.transcripts_bucket:
        try:
            resolved = resolve_bucket(None, None, settings.home)
        except ConfigError:
            resolved = "(no bucket configured)"
    else:
        resolved = resolve_bucket(bucket, settings.transcripts_bucket, settings.home)
    return Harvester(
        s3_client,
        source or build_scoped_source(settings, record_outcomes=True),  # the scope rules before upload
        scrubber or build_scrubber(settings),
        HarvestState.load(settings.home / STATE_FILE),
        bucket=resolved,
        tenant=tenant or settings.tenant,
        prefix=settings.transcripts_prefix,
        kms_key_id=kms_key_id(settings),
        dry_run=dry_run,
        multipart_threshold=multipart_threshold,
        clock=clock,
    )


def prepare_harvest(
    settings: Settings,
    harvester: Harvester,
    *,
    paths: Sequence[str] | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    now: float | None = None,
) -> HarvestJob:
    """Discover sessions like `episodic index` does and pick the ones to harvest."""
    report = harvester.new_report()
    sessions = select_sessions(
        harvester.source.discover(list(paths) if paths else None),
        report,
        now=harvester.clock() if now is None else now,
        quiet_minutes=settings.quiet_minutes,
        since=since,
        limit=limit,
    )
    return HarvestJob(harvester, report, sessions)


def drain_spool(settings: Settings, harvester: Harvester) -> HarvestReport:
    """Upload exactly the sessions the SessionEnd hook queued (no quiet period: they have ended) and remove
    the entries that finished; failed ones stay queued for the next run. One drainer at a time."""
    home = settings.home
    report = harvester.new_report()
    attempted: set[str] = set()
    while True:
        with uploader_lock(home) as held:
            if not held:
                report.skipped["another spool uploader is running"] += 1
                break
            entries = [e for e in read_entries(home) if e.raw not in attempted]
            finished: set[str] = set()
            outcome_by_path: dict[str, Outcome] = {}
            for entry in entries:
                attempted.add(entry.raw)
                outcome = outcome_by_path.get(entry.transcript_path)
                if outcome is None:
                    outcome = _harvest_path(harvester, entry.transcript_path, report)
                    outcome_by_path[entry.transcript_path] = outcome
                if outcome is not Outcome.FAILED:
                    finished.add(entry.raw)
            if finished and not harvester.dry_run:  # a dry run leaves the queue as it found it
                remove_entries(home, finished)
        # entries queued while this pass ran are picked up here (or by the uploader their hook started)
        if report.aborted or not any(e.raw not in attempted for e in read_entries(home)):
            break
    report.finished_at = datetime.now().astimezone().isoformat()
    return report


def _harvest_path(harvester: Harvester, transcript_path: str, report: HarvestReport) -> Outcome:
    path = Path(transcript_path).expanduser()
    report.found += 1
    if not path.is_file():
        report.skipped["queued transcript no longer exists"] += 1
        return Outcome.SKIPPED
    sessions = list(harvester.source.discover([str(path)]))
    chosen = next((s for s in sessions if Path(s.main_path) == path), sessions[0] if sessions else None)
    if chosen is None:
        report.skipped["queued file is not a session transcript"] += 1
        return Outcome.SKIPPED
    report.selected += 1
    return harvester.harvest_one(chosen, report)


def record_last_run(settings: Settings, report: HarvestReport, mode: str) -> Path:
    return write_last_run(settings.log_dir, {"mode": mode, **report.as_dict()})
