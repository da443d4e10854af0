"""Concurrent one-text calls (a server's queries) coalesced into one batch: one forward pass embeds
many queries for less than their separate passes (a model call is mostly per-call overhead for short
texts). No wait is added: a caller runs at once while fewer batches than cores are in flight; whoever
arrives meanwhile rides the next batch."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from episodic.kernel.ports import Embedder

MAX_BATCH = 32


class _Pending:
    __slots__ = ("done", "error", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.done = threading.Event()
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class CoalescingEmbedder(Embedder):
    """The same vectors as `inner` (same id, dimension and threshold); single texts are batched."""

    def __init__(self, inner: Embedder, parallel: int | None = None) -> None:
        self.inner = inner
        # batches in flight at once: numpy releases the GIL in its matmuls, so one per core
        self.parallel = max(1, parallel or os.cpu_count() or 1)
        self.id = inner.id
        self.dimension = inner.dimension
        self.default_min_similarity = inner.default_min_similarity
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._running = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1:
            return self.inner.embed(texts)
        mine = _Pending(texts[0])
        with self._lock:
            self._queue.append(mine)
            lead = self._running < self.parallel
            if lead:
                self._running += 1
        if lead:
            self._drain()
        mine.done.wait()
        if mine.error is not None:
            raise mine.error
        assert mine.vector is not None
        return mine.vector.reshape(1, -1)

    def _drain(self) -> None:
        """Embed batches until nobody waits (the leader serves the callers who came while it ran)."""
        while True:
            with self._lock:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                if not batch:
                    self._running = 0
                    return
            try:
                vectors = self.inner.embed([p.text for p in batch])
                for pending, vector in zip(batch, vectors, strict=True):
                    pending.vector = vector
            except BaseException as exc:  # each waiting caller gets the failure, none hangs
                for pending in batch:
                    pending.error = exc
            for pending in batch:
                pending.done.set()
