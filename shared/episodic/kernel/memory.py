"""The core assembled: one `Memory` holds the adapters every face (CLI, MCP, Lambda) works through, and each
registered feature's part (built by `episodic.assembly`; the core knows only the contract, `episodic.kernel.feature_contract`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from episodic.kernel.models import IndexManifest
from episodic.kernel.ports import (
    Distiller,
    Embedder,
    IngestLedger,
    KeptTrajectories,
    Reranker,
    TranscriptSource,
    UploadedSessions,
    VectorStore,
)
from episodic.kernel.settings import Settings

if TYPE_CHECKING:
    from episodic.kernel.feature_contract import Feature, SessionObserver


@dataclass
class Memory:
    settings: Settings
    source: TranscriptSource
    distiller: Distiller
    embedder: Embedder
    store: VectorStore
    ledger: IngestLedger | None = None
    uploaded: UploadedSessions | None = None  # on AWS: record_episode judges against the uploaded transcript
    kept: KeptTrajectories | None = None  # locally: trajectories kept after the agent deletes the transcript
    reranker: Reranker | None = None  # the second stage over the first stage's candidates (None: off)
    features: tuple[Feature, ...] = ()  # the registered features (episodic.assembly.features)
    parts: dict[str, object | None] = field(default_factory=dict)  # each feature's part by name; None: off

    @property
    def manifest(self) -> IndexManifest:
        return IndexManifest(
            embedder_id=self.embedder.id,
            dimension=self.embedder.dimension,
            renderings=list(self.settings.renderings),
        )

    @property
    def min_similarity(self) -> float:
        configured = self.settings.min_similarity
        return self.embedder.default_min_similarity if configured is None else configured

    def part(self, name: str) -> object | None:
        """A feature's part (None when the feature is off or not registered)."""
        return self.parts.get(name)

    def forget_session(self, tenant_id: str, session_id: str) -> bool:
        """Everything remembered of a session: its card, its kept trajectory and what each feature kept (e.g.
        the history's prompts in full, scratch records). True when anything was there."""
        found = self.store.delete(tenant_id, session_id)
        if self.kept is not None:
            found = self.kept.delete(tenant_id, session_id) or found
        for observer in self.observers():
            found = observer.forget(tenant_id, session_id) or found
        return found

    def observers(self) -> list[SessionObserver]:
        """The write path's observers of the features that are on, in registration order."""
        found = []
        for feature in self.features:
            part = self.parts.get(feature.name)
            if feature.observer is not None and part is not None:
                found.append(feature.observer(part, self))
        return found
