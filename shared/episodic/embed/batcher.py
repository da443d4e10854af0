"""Many sessions' texts embedded in one call, beside the parsing: a first index keeps every core busy.

Embedding is ~95 % of a first index, and one card's 3-4 texts are too few for the MiniLM embedder to
spread over its worker processes (episodic.embed.minilm, PARALLEL_MIN_TEXTS). The write path hands each
card's texts here; they are embedded about `batch_texts` at a time on a background thread, at most
`in_flight` calls at once, while the caller parses and distils the next sessions. Results come back in
the order items were added, in the caller's thread (stores need not be thread-safe). A vector does not
depend on its batch beyond float rounding (the model pads per length-sorted batch and masks the padding).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

Item = TypeVar("Item")
Embedded = tuple[Item, "np.ndarray | BaseException"]

# 128 texts (~35 cards) is 2-4 model batches per worker: both cores busy
BATCH_TEXTS = 128
# the first call is small (under minilm.PARALLEL_MIN_TEXTS, so it runs in this process while the worker
# processes start): the newest sessions are searchable within seconds of starting a first index
FIRST_BATCH_TEXTS = 16
IN_FLIGHT = 2  # one call embedding while the next is filled and the last one's cards are stored


@dataclass
class _Batch(Generic[Item]):
    items: list[Item] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    future: Future[np.ndarray] | None = None


class EmbedBatcher(Generic[Item]):
    """Collects (item, texts), embeds them in batches off the caller's thread, yields (item, matrix)."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        batch_texts: int | None = None,
        in_flight: int | None = None,
        first_batch_texts: int | None = None,
    ) -> None:
        batch_texts = BATCH_TEXTS if batch_texts is None else batch_texts
        in_flight = IN_FLIGHT if in_flight is None else in_flight
        self._first_batch_texts = min(
            batch_texts, FIRST_BATCH_TEXTS if first_batch_texts is None else first_batch_texts
        )
        self._submitted = 0
        if batch_texts < 1 or in_flight < 1:
            raise ValueError(f"batch_texts and in_flight must be positive, got {batch_texts}, {in_flight}")
        self._embed = embed
        self.batch_texts = batch_texts
        self.in_flight = in_flight
        self._filling: _Batch[Item] = _Batch()
        self._running: deque[_Batch[Item]] = deque()
        self._pool = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="embed")

    def add(self, item: Item, texts: Sequence[str]) -> list[Embedded[Item]]:
        """Queue one item's texts; returns the items whose vectors are ready (oldest first), waiting only
        when `in_flight` calls are already running."""
        self._filling.items.append(item)
        self._filling.sizes.append(len(texts))
        self._filling.texts.extend(texts)
        if len(self._filling.texts) >= (self.batch_texts if self._submitted else self._first_batch_texts):
            if self._submitted == 1 and self._running and self._running[0].future is not None:
                wait([self._running[0].future])  # the first cards alone on the CPU: no worker start-up beside
            self._submit()
        ready: list[Embedded[Item]] = []
        while self._running and (len(self._running) > self.in_flight or self._done(self._running[0])):
            ready.extend(self._collect(self._running.popleft()))
        return ready

    def finish(self) -> Iterator[Embedded[Item]]:
        """Embed what is left and yield every remaining item, oldest first."""
        if self._filling.items:
            self._submit()
        while self._running:
            yield from self._collect(self._running.popleft())

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> EmbedBatcher[Item]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _done(batch: _Batch[Item]) -> bool:
        return batch.future is not None and batch.future.done()

    def _submit(self) -> None:
        batch, self._filling = self._filling, _Batch()
        batch.future = self._pool.submit(self._embed, batch.texts)
        self._submitted += 1
        self._running.append(batch)

    def _collect(self, batch: _Batch[Item]) -> Iterator[Embedded[Item]]:
        """One batch's items with their rows; a failed call fails each of its items (none is lost)."""
        assert batch.future is not None
        try:
            matrix: np.ndarray | BaseException = np.asarray(batch.future.result())
        except Exception as exc:  # handed to the caller, which records each item's failure
            matrix = exc
        start = 0
        for item, size in zip(batch.items, batch.sizes, strict=True):
            yield item, matrix if isinstance(matrix, BaseException) else matrix[start : start + size]
            start += size
