"""A query is scrubbed with the configured scrubber (built-in rules and the user's patterns) before it
reaches the embedder, which may be a remote model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from episodic.core.search import search_traces
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.settings import load_settings
from kits.mcp_testkit import build_memory


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def test_query_reaches_the_embedder_scrubbed_with_user_patterns(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, embedder="hashing", scrub_patterns=["ACME-[0-9]{6}"])
    memory = build_memory(settings)
    memory.embedder = embedder = RecordingEmbedder()
    query = "deploy fails with pin ACME-123456 and key AKIAIOSFODNN7EXAMPLE"
    search_traces(memory, "local", query)
    assert len(embedder.seen) == 1
    assert "ACME-123456" not in embedder.seen[0] and "AKIAIOSFODNN7EXAMPLE" not in embedder.seen[0]
    assert "[REDACTED:custom]" in embedder.seen[0]
