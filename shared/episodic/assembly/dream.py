"""The one place the dream's adapters are chosen, local or AWS: `dream_adapters(settings, memory, clients)`.

Records: in the transcripts bucket for the deployed settings or the deployed store, else `<home>/dreams/`
(`features.dream_archive`, the dream feature's part, so the MCP tool reads the same archive).
Sessions: the deployed index with the bucket's transcripts, else the local index and transcripts (through
the history when there is one). Model: the configured LLM distiller (Bedrock or Claude Code), none offline.
Everything but the archive is opened on first use; the AWS clients are made only when an AWS part is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from episodic.assembly.adapters import build_embedder, build_source, build_store
from episodic.assembly.features import build_history, dream_archive
from episodic.aws.clients import AwsClients
from episodic.dream.history_source import HistoryWeekSource
from episodic.dream.llm import AgentCliDreamModel
from episodic.dream.port import DreamModel
from episodic.dream.service import DreamAdapters
from episodic.dream.source import IndexWeekSource, WeekSource
from episodic.dream.statements import Meaning
from episodic.kernel.errors import ConfigError, EpisodicError
from episodic.kernel.settings import Settings

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory


def dream_adapters(
    settings: Settings,
    memory: Memory | None = None,
    clients: Any = None,
    *,
    transcripts: Sequence[str] | None = None,
) -> DreamAdapters:
    """`memory`: one already built over the deployed store (the scheduled run's), whose sessions are read as
    they are with their transcripts from the bucket; `transcripts`: where local transcripts are."""
    aws = clients or AwsClients(settings)  # clients are made on first use
    sessions_in_bucket = bool(settings.transcripts_bucket) and (
        memory is not None or settings.store == "s3vectors"
    )

    def source() -> WeekSource:
        if sessions_in_bucket:
            return _bucket_source(settings, memory, aws)
        return _local_source(settings, transcripts)

    def meaning() -> Meaning:
        """Statement vectors from the configured embedder (what the index is embedded with)."""
        if memory is not None:
            return Meaning(memory.embedder)
        return Meaning(build_embedder(settings, aws))

    def tenants() -> list[str]:
        from episodic.aws.dream_source import bucket_tenants

        bucket = settings.transcripts_bucket or ""
        return bucket_tenants(aws.get("s3"), bucket, settings.transcripts_prefix)

    return DreamAdapters(
        archive=dream_archive(settings, aws),
        open_source=source,
        open_model=lambda: _model(settings, aws),
        open_meaning=meaning,
        list_tenants=tenants,
    )


def _bucket_source(settings: Settings, memory: Memory | None, clients: AwsClients) -> WeekSource:
    from episodic.aws.dream_source import BucketWeekSource
    from episodic.history.service import kept_history

    bucket, prefix = settings.transcripts_bucket or "", settings.transcripts_prefix
    if memory is not None:  # the scheduled run's memory: its cards as they are
        return BucketWeekSource(memory, clients.get("s3"), bucket, prefix)
    from episodic.assembly import build_memory

    memory = build_memory(settings, clients=clients)
    found = BucketWeekSource(memory, clients.get("s3"), bucket, prefix)
    history = kept_history(memory)
    return HistoryWeekSource(memory.store, history, found) if history else found


def _local_source(settings: Settings, transcripts: Sequence[str] | None) -> WeekSource:
    """The local index and transcripts, through the history when it exists (never created just to read)."""
    from episodic.history.sqlite_store import HISTORY_FILE

    if settings.store == "sqlite" and not settings.db_path.exists():
        raise ConfigError(f"no index at {settings.db_path}: run `episodic index` first")
    store = build_store(settings)
    fallback = IndexWeekSource(store, build_source(settings), transcripts)
    if not settings.history_enabled or not (settings.home / HISTORY_FILE).exists():
        return fallback
    history = build_history(settings)
    return HistoryWeekSource(store, history, fallback) if history is not None else fallback


def _model(settings: Settings, aws: AwsClients) -> DreamModel | None:
    """The configured LLM distiller writes the dream too; the heuristic one means offline."""
    if settings.distiller == "bedrock":
        from episodic.aws.dream_llm import BedrockDreamModel

        return BedrockDreamModel(bedrock_client(aws), settings.bedrock_model_id)
    if settings.distiller in ("claude-code", "codex", "gemini"):  # distill.agent_cli.AGENT_KINDS, unimported
        from episodic.distill.agents import distiller_for

        return AgentCliDreamModel(distiller_for(settings, settings.distiller))
    return None


def bedrock_client(aws: AwsClients) -> Any:
    """The Bedrock runtime client, or a ConfigError that says what to set (never a botocore traceback)."""
    try:
        return aws.get("bedrock-runtime")
    except EpisodicError:
        raise
    except Exception as exc:  # NoRegionError, a broken profile: one line naming the fix
        if type(exc).__name__ == "NoRegionError":
            raise ConfigError(
                "the Bedrock distiller writes the dream but no AWS region is set: set EPISODIC_AWS_REGION "
                "(or AWS_REGION), or run `episodic dream --offline`"
            ) from exc
        raise ConfigError(f"cannot open the Bedrock client for the dream: {exc}") from exc
