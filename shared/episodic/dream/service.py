"""The dream's entry points for the faces (CLI, Lambda): settings, a request and the adapters in, run out
(the adapters are chosen by `assembly.dream`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from episodic.dream.archive import DreamArchive, local_archive
from episodic.dream.cycle import DreamRun, run_dream
from episodic.dream.exemplar import load_exemplar
from episodic.dream.html import render_dashboard
from episodic.dream.port import DreamModel
from episodic.dream.source import WeekSource
from episodic.dream.statements import Meaning
from episodic.dream.weeks import IsoWeek, resolve_weeks
from episodic.kernel.errors import ConfigError, EpisodicError
from episodic.kernel.settings import Settings


@dataclass
class DreamAdapters:
    """What a dream reads and writes (built by `assembly.dream.dream_adapters`, or handed in by a test).
    All but the archive are opened on first use and kept: a dashboard opens no index, an offline run no model."""

    archive: DreamArchive
    open_source: Callable[[], WeekSource]
    open_model: Callable[[], DreamModel | None]
    open_meaning: Callable[[], Meaning]
    list_tenants: Callable[[], list[str]]  # whose sessions there are (the scheduled run's default)

    @cached_property
    def source(self) -> WeekSource:
        return self.open_source()

    @cached_property
    def model(self) -> DreamModel | None:
        return self.open_model()

    @cached_property
    def meaning(self) -> Meaning:
        return self.open_meaning()


@dataclass
class DreamRequest:
    week: str | None = None
    since: str | None = None
    until: str | None = None
    force: bool = False
    keep_survey: bool = False
    offline: bool = False
    transcripts: Sequence[str] | None = None


def dream_tenants(
    settings: Settings,
    tenants: Sequence[str] | None,
    adapters: DreamAdapters,
    *,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The scheduled run: every tenant (or those given) dreamt from the last record to the last complete
    week, with the Bedrock distiller, records in the bucket. One failed tenant fails the run after the rest."""
    if not settings.transcripts_bucket:
        raise ConfigError("EPISODIC_TRANSCRIPTS_BUCKET is required for the scheduled dream")
    chosen = list(tenants) if tenants else adapters.list_tenants()
    summary: dict[str, Any] = {}
    failures: list[str] = []
    for tenant in chosen:
        try:
            run = dream(settings.model_copy(update={"tenant": tenant}), DreamRequest(), adapters, now=now)
            summary[tenant] = [{"week": w.week, "status": w.status, "phases": w.phases} for w in run.weeks]
        except EpisodicError as exc:
            failures.append(f"{tenant}: {exc}")
    if failures:
        raise DreamRunError("; ".join(failures), summary)
    return summary


class DreamRunError(EpisodicError):
    """Some tenant's dream failed (the others ran); the message names each failure."""

    def __init__(self, message: str, summary: dict[str, Any]) -> None:
        super().__init__(message)
        self.summary = summary


def dream(
    settings: Settings, request: DreamRequest, adapters: DreamAdapters, *, now: datetime | None = None
) -> DreamRun:
    now = now or datetime.now(UTC)
    named = bool(request.week or request.since or request.until)
    tenant = settings.tenant

    def weeks_for(recorded: list[IsoWeek], first: datetime | None) -> list[IsoWeek]:
        return resolve_weeks(
            week=request.week,
            since=request.since,
            until=request.until,
            recorded=recorded,
            first_session=first,
            now=now,
        )

    if named:
        weeks_for([], None)  # a bad range is refused before anything is opened
    exemplar = load_exemplar(settings.dream_exemplar)
    source = adapters.source
    archive = adapters.archive
    model = None if request.offline else adapters.model
    meaning = adapters.meaning
    weeks = weeks_for(archive.weeks(tenant), None if named else source.earliest(tenant))
    return run_dream(
        source,
        archive,
        tenant,
        weeks,
        exemplar=exemplar,
        now=now,
        model=model,
        force=request.force,
        keep_survey=request.keep_survey,
        meaning=meaning,
    )


def write_dashboard(
    settings: Settings, request: DreamRequest, out: Path | None, archive: DreamArchive
) -> tuple[Path, int]:
    """The dashboard of the records in the request's range (all records when none is given)."""
    weeks = None
    if request.week or request.since:
        weeks = resolve_weeks(
            week=request.week,
            since=request.since,
            until=request.until,
            recorded=[],
            first_session=None,
            now=datetime.now(UTC),
        )
    records = archive.records(settings.tenant, weeks)
    if not records:
        raise ConfigError("no dream records in that range: run `episodic dream` first")
    path = out or local_archive(settings.home).folder(settings.tenant) / "dashboard.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_dashboard(records, settings.tenant), encoding="utf-8")
    return path, len(records)
