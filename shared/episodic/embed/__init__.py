"""Embedders: text to unit-length float32 vectors.

- `HashingEmbedder` (`hashing-v1-<dim>`): lexical feature hashing, deterministic, model-free (tests,
  fast bulk builds).
- `MiniLMEmbedder` (`minilm-l6-v2`, 384-d): all-MiniLM-L6-v2 in pure numpy on the CPU (the local default).
- `CachedEmbedder`: wraps either with a persistent SQLite cache.

Calibration of `default_min_similarity` (the cosine under which a result is "no sufficiently similar
episode"; EPISODIC_MIN_SIMILARITY overrides it), measured on short technical texts:
- MiniLM: paraphrases of one problem 0.63-0.68 (tests/unit/test_embed_minilm.py asserts > 0.5);
  neighbours in one area (two Python errors; Terraform drift vs a CloudFormation failure) 0.34-0.37;
  two different engineering problems (a pytest database fixture vs a slow docker build) 0.08;
  unrelated texts (a React leak vs baking bread) -0.01-0.04. 0.25 keeps paraphrases and close
  neighbours and drops different problems: a weak match returns nothing rather than noise.
- Hashing: similarity is shared words only. Texts with no word in common score 0 (±0.05 from bucket
  collisions at 384-d); paraphrases sharing one or two content words 0.11-0.16, sharing most words
  0.4+. 0.1 demands some real word overlap.
The store applies the threshold to the best rendering's cosine, with one keyword exception
(see episodic.store.hybrid).

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
