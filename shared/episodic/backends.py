"""The one place that chooses adapters from settings (AWS clients are created only when asked for)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from episodic.aws.clients import aws_client
from episodic.errors import ConfigError
from episodic.ports import Distiller, Embedder, IngestLedger, TranscriptSource, VectorStore
from episodic.scrub import Scrubber
from episodic.service import Memory
from episodic.settings import Settings, load_settings

if TYPE_CHECKING:
    from episodic.store.sqlite import SQLiteStore


def build_scrubber(settings: Settings) -> Scrubber:
    return Scrubber.from_settings(settings)


def build_source(settings: Settings) -> TranscriptSource:
    """Every agent's sessions (Claude Code, Codex CLI, Gemini CLI), each from its own default roots."""
    from episodic.parse.agents import AllAgentsSource

    return AllAgentsSource.from_settings(settings, build_scrubber(settings))


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        from episodic.embed.hashing import HashingEmbedder

        return HashingEmbedder(settings.hashing_dimension)
    if settings.embedder == "titan":
        from episodic.aws.titan_embedder import TitanEmbedder

        return TitanEmbedder(
            aws_client(settings, "bedrock-runtime"), settings.titan_model_id, settings.titan_dimension
        )
    from episodic.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def build_distiller(settings: Settings) -> Distiller:
    if settings.distiller == "bedrock":
        from episodic.aws.bedrock_distiller import BedrockDistiller

        return BedrockDistiller(aws_client(settings, "bedrock-runtime"), settings.bedrock_model_id)
    if settings.distiller == "claude-code":
        from episodic.distill.claude_code import ClaudeCodeDistiller

        return ClaudeCodeDistiller.from_settings(settings)
    from episodic.distill.heuristic import HeuristicDistiller

    return HeuristicDistiller()


def build_store(settings: Settings) -> tuple[VectorStore, IngestLedger | None]:
    if settings.store == "s3vectors":
        from episodic.aws.s3vectors_store import S3VectorsStore

        if not settings.vector_bucket:
            raise ConfigError("EPISODIC_VECTOR_BUCKET is required with EPISODIC_STORE=s3vectors")
        store = S3VectorsStore(
            aws_client(settings, "s3vectors"), settings.vector_bucket, settings.vector_index
        )
        return store, None
    settings.home.mkdir(parents=True, exist_ok=True)
    sqlite_store = sqlite_store_at(settings, settings.db_path)
    return sqlite_store, sqlite_store


def sqlite_store_at(settings: Settings, path: Path) -> SQLiteStore:
    """A SQLite index at `path` ranking with the settings' weights (the index, an evaluation's scratch one)."""
    from episodic.store.sqlite import SQLiteStore

    return SQLiteStore(
        path, keyword_weight=settings.keyword_weight, rendering_weights=settings.rendering_weights
    )


def build_memory(
    settings: Settings | None = None,
    *,
    embedder: Embedder | None = None,
    distiller: Distiller | None = None,
    store: VectorStore | None = None,
    source: TranscriptSource | None = None,
    ledger: IngestLedger | None = None,
) -> Memory:
    settings = settings or load_settings()
    if store is None:
        store, built_ledger = build_store(settings)
        ledger = ledger or built_ledger
    return Memory(
        settings=settings,
        source=source or build_source(settings),
        distiller=distiller or build_distiller(settings),
        embedder=embedder or build_embedder(settings),
        store=store,
        ledger=ledger,
    )
