"""CoalescingEmbedder: concurrent single-text calls get exactly the vectors the inner embedder gives."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest
from episodic.embed.coalesce import CoalescingEmbedder
from episodic.embed.hashing import HashingEmbedder


class _Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[int] = []
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        self.gate.wait(5)  # hold the first batch so the others queue behind it
        return super().embed(texts)


def test_concurrent_queries_share_batches_and_keep_their_vectors() -> None:
    inner = _Counting()
    coalescing = CoalescingEmbedder(inner, parallel=1)
    texts = [f"query number {i} about a flaky test" for i in range(12)]
    results: dict[int, np.ndarray] = {}

    def ask(i: int) -> None:
        results[i] = coalescing.embed([texts[i]])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(coalescing._queue) < len(texts) - 1 and time.monotonic() < deadline:
        time.sleep(0.01)  # every caller but the running one waits in the queue
    inner.gate.set()
    for thread in threads:
        thread.join(10)
    expected = HashingEmbedder(64).embed(texts)
    for i in range(len(texts)):
        assert results[i].shape == (1, 64)
        np.testing.assert_allclose(results[i][0], expected[i])
    assert inner.calls == [1, len(texts) - 1]  # the first ran alone, the rest shared one batch
    assert coalescing.id == inner.id and coalescing.dimension == inner.dimension


def test_a_failing_batch_fails_each_caller_and_the_next_call_works() -> None:
    class Broken(HashingEmbedder):
        fail = True

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if self.fail:
                raise RuntimeError("model unavailable")
            return super().embed(texts)

    inner = Broken(64)
    coalescing = CoalescingEmbedder(inner)
    with pytest.raises(RuntimeError, match="model unavailable"):
        coalescing.embed(["a query"])
    inner.fail = False
    assert coalescing.embed(["a query"]).shape == (1, 64)
