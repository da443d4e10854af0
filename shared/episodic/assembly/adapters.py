"""The core's adapters, local or AWS, from the settings (AWS clients are given by the caller or created only
when an adapter needs one): transcript source, scrubber, embedder, distiller, card store, failure ledger."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from episodic.aws.clients import AwsClients, aws_client
from episodic.kernel.errors import ConfigError
from episodic.kernel.ports import (
    Distiller,
    Embedder,
    IngestLedger,
    KeptTrajectories,
    Reranker,
    TranscriptSource,
    VectorStore,
)
from episodic.kernel.settings import DeployedSettings, Settings

if TYPE_CHECKING:
    from episodic.aws.secrets_auth import SecretTokenStore
    from episodic.kernel.models import DistillerInfo, NotEpisode, SessionSource, Trajectory
    from episodic.kernel.ports import DistillResult
    from episodic.scrub import Scrubber
    from episodic.store.sqlite import SQLiteStore


def build_scrubber(settings: Settings) -> Scrubber:
    from episodic.scrub import Scrubber  # at first use, like every adapter: `stats` never scrubs

    return Scrubber.from_settings(settings)


def build_source(settings: Settings) -> TranscriptSource:
    """Every agent's sessions (Claude Code, Codex CLI, Gemini CLI), each from its own default roots."""
    from episodic.parse.agents import AllAgentsSource

    # a Lambda never scans a home folder: it parses the files it is handed
    deployed = isinstance(settings, DeployedSettings)
    return AllAgentsSource.from_settings(settings, build_scrubber(settings), scan_home=not deployed)


def build_scoped_source(settings: Settings, *, record_outcomes: bool = False) -> TranscriptSource:
    """`build_source` honouring the scope rules (`index`, `inspect`, `harvest`); with `record_outcomes`,
    the experiment's outcome measures of the sessions it logged are recorded as they are read."""
    from episodic.experiment.recorder import MeasureRecorder
    from episodic.sessions.scope_source import ScopedSource, rules_from_settings

    recorder = MeasureRecorder(settings.home) if record_outcomes else None
    return ScopedSource(
        DeferredSource(lambda: build_source(settings)), rules_from_settings(settings), recorder
    )


class DeferredSource(TranscriptSource):
    """Every agent's source, its parsers imported at the first session read (a memory serving `show` or
    `search` reads none)."""

    def __init__(self, build: Callable[[], TranscriptSource]) -> None:
        self.source = cache(build)  # built once, at the first call

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        return self.source().discover(paths)

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        return self.source().load(source)

    def admit(self, loaded: Trajectory) -> Trajectory | NotEpisode:
        return self.source().admit(loaded)


def build_embedder(settings: Settings, clients: AwsClients | None = None) -> Embedder:
    if settings.embedder == "hashing":  # computing it is cheaper than looking it up: never cached
        from episodic.embed.hashing import HashingEmbedder

        return HashingEmbedder(settings.hashing_dimension)
    embedder: Embedder
    if settings.embedder == "titan":
        from episodic.aws.titan_embedder import TitanEmbedder

        clients = clients or AwsClients(settings)
        embedder = TitanEmbedder(
            clients.get("bedrock-runtime"), settings.titan_model_id, settings.titan_dimension
        )
    else:
        from episodic.embed.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    if settings.embedding_cache_dir is None:
        return embedder
    from episodic.embed.cache import CachedEmbedder

    return CachedEmbedder(embedder, settings.embedding_cache_dir)


def build_reranker(settings: Settings, clients: AwsClients | None = None) -> Reranker | None:
    """The second stage the settings name (ports.Reranker); None when it is off."""
    if settings.reranker == "none":
        return None
    if settings.reranker == "bedrock":
        from episodic.aws.bedrock_reranker import BedrockReranker

        clients = clients or AwsClients(settings)
        return BedrockReranker(
            clients.get("bedrock-agent-runtime"),
            settings.rerank_model_id,
            region=settings.aws_region,
            depth=settings.rerank_depth,
            min_relevance=settings.rerank_min_relevance,
            faint_score=settings.faint_score,
        )
    if settings.reranker == "local":
        return local_judge(settings)
    raise ConfigError(f"unknown reranker {settings.reranker!r}")


def local_judge(settings: Settings) -> Reranker | None:
    """The cross-encoder judge, where its model is installed (None otherwise: `doctor` says so); a model
    that is there but altered is refused at its first use and search keeps the first stage's order."""
    from episodic.judge.model import cross_encoder, default_model_dir
    from episodic.judge.reranker import JudgeWeights, LocalReranker

    model_dir = settings.judge_model_dir or default_model_dir()
    if not model_dir.exists():
        return None
    weights = JudgeWeights(
        llm=settings.judge_llm_weight,
        offline=settings.judge_offline_weight,
        offline_reads=settings.judge_offline_reads,
    )
    return LocalReranker(
        cross_encoder(model_dir),
        depth=settings.judge_depth,
        max_tokens=settings.judge_max_tokens,
        weights=weights,
    )


def build_distiller(settings: Settings, clients: AwsClients | None = None) -> Distiller:
    if settings.distiller == "bedrock":
        from episodic.aws.bedrock_distiller import BedrockDistiller

        clients = clients or AwsClients(settings)
        return BedrockDistiller(clients.get("bedrock-runtime"), settings.bedrock_model_id)
    if settings.distiller in ("claude-code", "codex", "gemini"):  # distill.agent_cli.AGENT_KINDS, unimported
        from episodic.distill.agents import distiller_for

        return distiller_for(settings, settings.distiller)
    return DeferredDistiller(heuristic_distiller)


def heuristic_distiller() -> Distiller:
    from episodic.distill.heuristic import HeuristicDistiller

    return HeuristicDistiller()


class DeferredDistiller(Distiller):
    """The heuristic distiller, its rules imported at the first use (`show`, `search`, `history` assemble a
    memory and never distil)."""

    def __init__(self, build: Callable[[], Distiller]) -> None:
        self.distiller = cache(build)  # built once, at the first call

    @property
    def info(self) -> DistillerInfo:  # type: ignore[override]
        return self.distiller().info

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.distiller().concurrency

    @property
    def uses_survey(self) -> bool:  # type: ignore[override]
        return self.distiller().uses_survey

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        return self.distiller().distill(trajectory, survey)


def build_store(settings: Settings, clients: AwsClients | None = None) -> VectorStore:
    if settings.store == "s3vectors":
        from episodic.aws.s3vectors_store import S3VectorsStore

        if not settings.vector_bucket:
            raise ConfigError("EPISODIC_VECTOR_BUCKET is required with EPISODIC_STORE=s3vectors")
        clients = clients or AwsClients(settings)
        return S3VectorsStore(
            clients.get("s3vectors"),
            settings.vector_bucket,
            settings.vector_index,
            keyword_weight=settings.keyword_weight,
            rendering_weights=settings.rendering_weights,
        )
    if settings.store == "opensearch":  # cards on OpenSearch Serverless instead of S3 Vectors
        from episodic.aws.opensearch_cards import OpenSearchCardStore
        from episodic.aws.opensearch_client import opensearch_client

        return OpenSearchCardStore(
            opensearch_client(settings),
            settings.opensearch_cards_index,
            keyword_weight=settings.keyword_weight,
            rendering_weights=settings.rendering_weights,
        )
    from episodic.plumbing.private_home import secure_home

    secure_home(settings.home, settings.db_path)  # 700 / 600 before SQLite creates the file
    return sqlite_store_at(settings, settings.db_path)


def sqlite_store_at(settings: Settings, path: Path) -> SQLiteStore:
    """A SQLite index at `path` ranking with the settings' weights (the index, an evaluation's scratch one)."""
    from episodic.store.sqlite import SQLiteStore

    return SQLiteStore(
        path, keyword_weight=settings.keyword_weight, rendering_weights=settings.rendering_weights
    )


def build_ledger(
    settings: Settings, store: VectorStore, clients: AwsClients | None = None
) -> IngestLedger | None:
    """Failure records: beside the transcripts in the AWS deployment, in the SQLite index locally."""
    if isinstance(settings, DeployedSettings):
        from episodic.aws.pipeline import S3FailureLedger

        clients = clients or AwsClients(settings)
        return S3FailureLedger(clients.get("s3"), settings.transcripts_bucket, settings.failures_prefix)
    from episodic.store.sqlite import SQLiteStore

    return store if isinstance(store, SQLiteStore) else None


def build_kept(settings: Settings) -> KeptTrajectories | None:
    """Trajectories kept in the home (None: switched off, or a Lambda, whose transcripts stay in the bucket)."""
    if isinstance(settings, DeployedSettings) or not settings.keep_trajectories:
        return None
    from episodic.store.kept_trajectories import KEPT_FOLDER, KeptTrajectoryFiles

    return KeptTrajectoryFiles(
        settings.home / KEPT_FOLDER, int(settings.keep_trajectories_max_mb * 1_000_000)
    )


def memory_source(settings: Settings) -> TranscriptSource:
    """The local memory reads what the scope rules allow (the deployed one reads what harvest uploaded)."""
    if isinstance(settings, DeployedSettings):
        return build_source(settings)
    return build_scoped_source(settings, record_outcomes=True)


def secret_token_store(settings: Settings, secret_id: str, profile: str | None = None) -> SecretTokenStore:
    """The deployed stack's bearer tokens in Secrets Manager (`token --aws`), from the local machine."""
    from episodic.aws.secrets_auth import SecretTokenStore

    return SecretTokenStore(aws_client(settings, "secretsmanager", profile), secret_id)
