"""Embedders: text to unit-length float32 vectors.

- `HashingEmbedder` (`hashing-v1-<dim>`): lexical feature hashing, deterministic, model-free (tests, bulk).
- `MiniLMEmbedder` (`minilm-l6-v2`, 384-d): all-MiniLM-L6-v2 in pure numpy on the CPU (the local default).
- `CachedEmbedder`: wraps either with a persistent SQLite cache.

`default_min_similarity` is the cosine under which a result is "no sufficiently similar episode"
(EPISODIC_MIN_SIMILARITY overrides it), per embedder: it keeps paraphrases and close neighbours and drops
different problems (its calibration: docs/retrieval.md). The store applies it to the best rendering's cosine,
with one keyword exception (episodic.store.hybrid).

May import: `kernel/`, `plumbing/`.
"""

from __future__ import annotations

from episodic.embed.cache import CachedEmbedder
from episodic.embed.hashing import HashingEmbedder

__all__ = ["CachedEmbedder", "HashingEmbedder", "MiniLMEmbedder"]


def __getattr__(name: str) -> object:
    if name == "MiniLMEmbedder":  # lazy: importing the hashing embedder must not touch the model code
        from episodic.embed.minilm import MiniLMEmbedder

        return MiniLMEmbedder
    raise AttributeError(name)
