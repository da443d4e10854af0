"""The dream's composition and its one entry point for the faces (CLI, Lambda): settings in, run out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.dream.archive import LocalArchive, RecordArchive, S3Archive
from episodic.dream.aws_source import BucketWeekSource
from episodic.dream.cycle import DreamRun, run_dream
from episodic.dream.exemplar import load_exemplar
from episodic.dream.history_source import HistoryWeekSource
from episodic.dream.html import render_dashboard
from episodic.dream.llm import BedrockDreamModel, ClaudeCodeDreamModel, DreamModel
from episodic.dream.record import ParsedRecord, parse_record
from episodic.dream.source import IndexWeekSource, WeekSource
from episodic.dream.statements import Meaning
from episodic.dream.weeks import IsoWeek, resolve_weeks
from episodic.errors import ConfigError, EpisodicError
from episodic.settings import DeployedSettings, Settings

if TYPE_CHECKING:
    from episodic.memory import Memory


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
        return BedrockDreamModel(bedrock_client(clients), settings.bedrock_model_id)
    if settings.distiller == "claude-code":
        from episodic.distill.claude_code import ClaudeCodeDistiller

        return ClaudeCodeDreamModel(ClaudeCodeDistiller.from_settings(settings))
    return None


def bedrock_client(clients: Any) -> Any:
    """The Bedrock runtime client, or a ConfigError that says what to set (never a botocore traceback)."""
    try:
        return clients.get("bedrock-runtime")
    except EpisodicError:
        raise
    except Exception as exc:  # NoRegionError, a broken profile: one line naming the fix
        if type(exc).__name__ == "NoRegionError":
            raise ConfigError(
                "the Bedrock distiller writes the dream but no AWS region is set: set EPISODIC_AWS_REGION "
                "(or AWS_REGION), or run `episodic dream --offline`"
            ) from exc
        raise ConfigError(f"cannot open the Bedrock client for the dream: {exc}") from exc


def build_meaning(settings: Settings, clients: Any = None) -> Meaning:
    """Statement vectors from the configured embedder (what the index is embedded with)."""
    from episodic.assembly import build_embedder

    return Meaning(build_embedder(settings, clients))


def build_week_source(
    settings: Settings, transcripts: Sequence[str] | None, clients: Any = None
) -> WeekSource:
    """The local index and transcripts; with the deployed store, its index and the bucket's transcripts."""
    from episodic.assembly import build_history, build_memory, build_source, build_store
    from episodic.history.service import kept_history
    from episodic.history.sqlite_store import HISTORY_FILE

    if settings.store == "s3vectors" and settings.transcripts_bucket:
        from episodic.aws.clients import AwsClients

        clients = clients or AwsClients(settings)
        memory = build_memory(settings, clients=clients)
        bucket = BucketWeekSource(
            memory, clients.get("s3"), settings.transcripts_bucket, settings.transcripts_prefix
        )
        history = kept_history(memory)
        return HistoryWeekSource(memory.store, history, bucket) if history else bucket
    if settings.store == "sqlite" and not settings.db_path.exists():
        raise ConfigError(f"no index at {settings.db_path}: run `episodic index` first")
    store = build_store(settings)
    fallback = IndexWeekSource(store, build_source(settings), transcripts)
    if not settings.history_enabled or not (settings.home / HISTORY_FILE).exists():
        return fallback  # never create a history file just to read a week
    history = build_history(settings)
    return HistoryWeekSource(store, history, fallback) if history is not None else fallback


def bucket_tenants(s3_client: Any, bucket: str, prefix: str) -> list[str]:
    """The tenants that have transcripts in the bucket (`<prefix><tenant>/`)."""
    tenants: list[str] = []
    for page in s3_client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, Delimiter="/"
    ):
        tenants += [p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", [])]
    return sorted(tenants)


def dream_tenants(
    settings: Settings,
    tenants: Sequence[str] | None,
    clients: Any,
    *,
    memory: Memory | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The scheduled run: every tenant (or those given) dreamt from the last record to the last complete
    week, with the Bedrock distiller, records in the bucket. One failed tenant fails the run after the rest."""
    if not settings.transcripts_bucket:
        raise ConfigError("EPISODIC_TRANSCRIPTS_BUCKET is required for the scheduled dream")
    s3 = clients.get("s3")
    chosen = (
        list(tenants)
        if tenants
        else bucket_tenants(s3, settings.transcripts_bucket, settings.transcripts_prefix)
    )
    if memory is None:
        source = build_week_source(settings, None, clients)
    else:
        source = BucketWeekSource(memory, s3, settings.transcripts_bucket, settings.transcripts_prefix)
    archive = build_archive(settings, clients)
    model = build_model(settings, clients)
    meaning = Meaning(memory.embedder) if memory is not None else build_meaning(settings, clients)
    summary: dict[str, Any] = {}
    failures: list[str] = []
    for tenant in chosen:
        try:
            run = dream(
                settings.model_copy(update={"tenant": tenant}),
                DreamRequest(),
                source=source,
                archive=archive,
                model=model,
                now=now,
                meaning=meaning,
            )
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
    settings: Settings,
    request: DreamRequest,
    *,
    source: WeekSource | None = None,
    archive: RecordArchive | None = None,
    model: DreamModel | None = None,
    now: datetime | None = None,
    meaning: Meaning | None = None,
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
    source = source or build_week_source(settings, request.transcripts)
    archive = archive or build_archive(settings)
    if model is None and not request.offline:
        model = build_model(settings)
    meaning = meaning or build_meaning(settings)
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
