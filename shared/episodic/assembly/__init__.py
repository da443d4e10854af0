"""The assembly: the one place that decides local or AWS and builds every store, adapter and feature.

Faces (the CLI, the Lambdas, the MCP transports, the viewer) ask it for a `Memory`, a source, an MCP
registry; nothing else imports an adapter. `adapters` builds the core's ports from the settings,
`features` the registered features' parts, `mcp` the tool registry with every feature's tools.

May import: everything below the faces, `aws/` included (the only place choosing local or AWS).
"""

from __future__ import annotations

from episodic.assembly.adapters import (
    aws_client,
    build_distiller,
    build_embedder,
    build_kept,
    build_ledger,
    build_reranker,
    build_scoped_source,
    build_scrubber,
    build_source,
    build_store,
    memory_source,
    secret_token_store,
    sqlite_store_at,
)
from episodic.assembly.features import FEATURES, build_history, build_injections, build_parts
from episodic.aws.clients import AwsClients
from episodic.kernel.feature_contract import Feature
from episodic.kernel.memory import Memory
from episodic.kernel.ports import (
    Distiller,
    Embedder,
    IngestLedger,
    KeptTrajectories,
    Reranker,
    TranscriptSource,
    VectorStore,
)
from episodic.kernel.settings import Settings, load_settings


def build_memory(
    settings: Settings | None = None,
    *,
    clients: AwsClients | None = None,
    embedder: Embedder | None = None,
    distiller: Distiller | None = None,
    store: VectorStore | None = None,
    source: TranscriptSource | None = None,
    ledger: IngestLedger | None = None,
    kept: KeptTrajectories | None = None,
    reranker: Reranker | None = None,
    parts: dict[str, object | None] | None = None,
    features: tuple[Feature, ...] = FEATURES,
) -> Memory:
    """The memory the settings describe; any adapter or feature part can be handed in instead (tests, a
    face's own); `features`: the registered ones."""
    settings = settings or load_settings()
    clients = clients or AwsClients(settings)
    store = build_store(settings, clients) if store is None else store
    memory = Memory(
        settings=settings,
        source=memory_source(settings) if source is None else source,
        distiller=build_distiller(settings, clients) if distiller is None else distiller,
        embedder=build_embedder(settings, clients) if embedder is None else embedder,
        store=store,
        ledger=build_ledger(settings, store, clients) if ledger is None else ledger,
        kept=build_kept(settings) if kept is None else kept,
        reranker=build_reranker(settings, clients) if reranker is None else reranker,
        features=features,
    )
    memory.parts = build_parts(memory, clients, parts)
    return memory


__all__ = [
    "FEATURES",
    "AwsClients",
    "aws_client",
    "build_distiller",
    "build_embedder",
    "build_history",
    "build_injections",
    "build_kept",
    "build_ledger",
    "build_memory",
    "build_reranker",
    "build_scoped_source",
    "build_scrubber",
    "build_source",
    "build_store",
    "secret_token_store",
    "sqlite_store_at",
]
