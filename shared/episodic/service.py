"""The core assembled: one `Memory` holds the adapters every face (CLI, MCP, Lambda) works through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from episodic.models import IndexManifest
from episodic.ports import Distiller, Embedder, IngestLedger, TranscriptSource, UploadedSessions, VectorStore
from episodic.settings import Settings

if TYPE_CHECKING:
    from episodic.history.port import HistoryStore
    from episodic.scratch.service import ScratchMemory


@dataclass
class Memory:
    settings: Settings
    source: TranscriptSource
    distiller: Distiller
    embedder: Embedder
    store: VectorStore
    ledger: IngestLedger | None = None
    scratch: ScratchMemory | None = None  # tool-outcome memory (episodic.scratch); None: off
    history: HistoryStore | None = None  # per-session history records (episodic.history); None: not kept
    uploaded: UploadedSessions | None = None  # on AWS: record_episode judges against the uploaded transcript

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
