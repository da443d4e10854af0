"""One interface for every retrieval system under evaluation, and the registry new systems join."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.progress import Progress
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.ports import Distiller, Embedder
from episodic.kernel.settings import Settings

T = TypeVar("T")


@dataclass
class SystemContext:
    """What every system may use: the same embedder for all, settings, a scratch folder, progress."""

    settings: Settings
    embedder: Embedder
    distiller: Distiller | None
    workdir: Path
    progress: Progress = field(default_factory=Progress)
    k: int = 3  # the run's recall cut-off
    _memo: dict[str, Any] = field(default_factory=dict)

    def shared(self, key: str, build: Callable[[], T]) -> T:
        """Build an artefact once per run and share it between systems (e.g. card vectors)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]  # type: ignore[no-any-return]

    def built(self, key: str) -> Any:
        """The artefact `shared` built under `key`, or None when no system asked for it."""
        return self._memo.get(key)

    def embed(self, texts: Sequence[str], label: str, batch: int = 256) -> np.ndarray:
        """Embed with progress, in batches (the embedder caches by content when it can)."""
        self.progress.start(label, len(texts))
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), batch):
            chunk = texts[start : start + batch]
            parts.append(self.embedder.embed(list(chunk)))
            self.progress.advance(len(chunk))
        if not parts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.vstack(parts)


class RetrievalSystem(ABC):
    """Build an index over the corpus once, then rank every session for a query, best first."""

    name: ClassVar[str]
    description: ClassVar[str]
    needs_cards: ClassVar[bool] = False

    def __init__(self, context: SystemContext) -> None:
        self.context = context

    @abstractmethod
    def build(self, corpus: EvalCorpus) -> None: ...

    @abstractmethod
    def rank(self, query: str) -> list[str]:
        """Session ids, best first; a session the system cannot match may be left out (a miss)."""

    def rank_many(self, queries: Sequence[str]) -> list[list[str]]:
        return [self.rank(q) for q in queries]

    def query_notes(self, query: str, target: str) -> dict[str, Any]:
        """Extra per-query facts for the report (e.g. the target's similarity); called after rank."""
        return {}

    def summary_notes(
        self, per_query: Sequence[dict[str, Any]], ranks: Sequence[int | None], k: int
    ) -> dict[str, Any]:
        """System-level facts derived from the per-query notes (e.g. top-k hits a threshold would drop)."""
        return {}


SYSTEMS: dict[str, type[RetrievalSystem]] = {}


def register_system(cls: type[RetrievalSystem]) -> type[RetrievalSystem]:
    """Class decorator: a new system (another embedder, a reranker) slots in by registering."""
    if cls.name in SYSTEMS and SYSTEMS[cls.name] is not cls:
        raise ValueError(f"retrieval system {cls.name!r} is already registered")
    SYSTEMS[cls.name] = cls
    return cls


def select_systems(names: Sequence[str] | None) -> list[type[RetrievalSystem]]:
    """The registered systems by name, in registry order for None; unknown names are an error."""
    if not names:
        return list(SYSTEMS.values())
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise InvalidArgumentError(f"unknown system(s) {', '.join(unknown)}; known: {', '.join(SYSTEMS)}")
    return [SYSTEMS[n] for n in dict.fromkeys(names)]


def rank_by_scores(ids: Sequence[str], scores: np.ndarray, keep: np.ndarray | None = None) -> list[str]:
    """Ids by descending score (stable: earlier ids first on exact ties); `keep` masks the rest out."""
    order = np.argsort(-scores, kind="stable")
    if keep is not None:
        order = order[keep[order]]
    return [ids[i] for i in order]
