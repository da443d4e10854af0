"""The dream's composition and its one entry point for the faces (CLI, Lambda): settings in, run out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.dream.archive import LocalArchive, RecordArchive, S3Archive
from episodic.dream.cycle import DreamRun, run_dream
from episodic.dream.exemplar import load_exemplar
from episodic.dream.html import render_dashboard
from episodic.dream.llm import BedrockDreamModel, ClaudeCodeDreamModel, DreamModel
from episodic.dream.record import ParsedRecord, parse_record
from episodic.dream.source import IndexWeekSource, WeekSource
from episodic.dream.weeks import IsoWeek, resolve_weeks
from episodic.errors import ConfigError
from episodic.settings import DeployedSettings, Settings


@dataclass
class DreamRequest:
    week: str | None = None
    since: str | None = None
    until: str | None = None
    force: bool = False
    keep_survey: bool = False
    offline: bool = False
    transcripts: Sequence[str] | None = None


def build_archive(settings: Settings, clients: Any = None) -> RecordArchive:
    """Records beside the index locally; in the transcripts bucket in the AWS deployment."""
    if isinstance(settings, DeployedSettings) or (
        settings.store == "s3vectors" and settings.transcripts_bucket
    ):
        from episodic.aws.clients import AwsClients

        if not settings.transcripts_bucket:
            raise ConfigError("EPISODIC_TRANSCRIPTS_BUCKET is required for records in the bucket")
        clients = clients or AwsClients(settings)
        return S3Archive(
            clients.get("s3"), settings.transcripts_bucket, settings.dreams_prefix, settings.kms_key_id
        )
    return LocalArchive(settings.home / "dreams")


def build_model(settings: Settings, clients: Any = None) -> DreamModel | None:
    """The configured LLM distiller writes the dream too; the heuristic one means offline."""
    if settings.distiller == "bedrock":
        from episodic.aws.clients import AwsClients

        clients = clients or AwsClients(settings)
        return BedrockDreamModel(clients.get("bedrock-runtime"), settings.bedrock_model_id)
    if settings.distiller == "claude-code":
        from episodic.distill.claude_code import ClaudeCodeDistiller

        return ClaudeCodeDreamModel(ClaudeCodeDistiller.from_settings(settings))
    return None


def build_week_source(settings: Settings, transcripts: Sequence[str] | None) -> WeekSource:
    from episodic.backends import build_source, build_store

    if settings.store == "sqlite" and not settings.db_path.exists():
        raise ConfigError(f"no index at {settings.db_path}: run `episodic index` first")
    return IndexWeekSource(build_store(settings), build_source(settings), transcripts)


def dream(
    settings: Settings,
    request: DreamRequest,
    *,
    source: WeekSource | None = None,
    archive: RecordArchive | None = None,
    model: DreamModel | None = None,
    now: datetime | None = None,
) -> DreamRun:
    now = now or datetime.now(UTC)
    source = source or build_week_source(settings, request.transcripts)
    archive = archive or build_archive(settings)
    if model is None and not request.offline:
        model = build_model(settings)
    tenant = settings.tenant
    weeks = resolve_weeks(
        week=request.week,
        since=request.since,
        until=request.until,
        recorded=archive.weeks(tenant),
        first_session=None if (request.week or request.since) else source.earliest(tenant),
        now=now,
    )
    return run_dream(
        source,
        archive,
        tenant,
        weeks,
        exemplar=load_exemplar(settings.dream_exemplar),
        now=now,
        model=model,
        force=request.force,
        keep_survey=request.keep_survey,
    )


def read_records(
    archive: RecordArchive, tenant: str, weeks: list[IsoWeek] | None = None
) -> list[ParsedRecord]:
    chosen = archive.weeks(tenant)
    if weeks:
        wanted = set(weeks)
        chosen = [w for w in chosen if w in wanted]
    return [parse_record(text) for w in chosen if (text := archive.read(tenant, w))]


def write_dashboard(settings: Settings, request: DreamRequest, out: Path | None) -> tuple[Path, int]:
    """The dashboard of the records in the request's range (all records when none is given)."""
    archive = build_archive(settings)
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
    records = read_records(archive, settings.tenant, weeks)
    if not records:
        raise ConfigError("no dream records in that range: run `episodic dream` first")
    path = out or settings.home / "dreams" / settings.tenant / "dashboard.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_dashboard(records, settings.tenant), encoding="utf-8")
    return path, len(records)
