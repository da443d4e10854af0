"""A deterministic feature-hashing embedder: no model, no randomness, stable across processes.

Word unigrams and bigrams (lowercased, lightly stemmed) are hashed with blake2b (Python's `hash()` is
salted per process) into `dimension` buckets with a sign bit, then L2-normalised. Lexical, not
semantic: it exists for tests and for building large indexes fast, not for good retrieval.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from episodic.kernel.ports import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)
_BIGRAM_WEIGHT = 0.5  # bigrams add word order, but the words themselves carry most of the signal
_EMPTY_FEATURE = "\x00empty-text"  # empty text maps to this feature's one-hot (cosine indexes reject zeros)


def _stem(word: str) -> str:
    """Strip a few English suffixes so "tests", "testing" and "tested" share a feature."""
    for suffix, min_len in (("ing", 6), ("ed", 5), ("es", 5), ("s", 4)):
        if len(word) >= min_len and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


class HashingEmbedder(Embedder):
    default_min_similarity = 0.1  # see embed/__init__.py for the calibration

    def __init__(self, dimension: int = 384) -> None:
        if dimension < 8:
            raise ValueError(f"hashing dimension must be at least 8, got {dimension}")
        self.dimension = dimension
        self.id = f"hashing-v1-{dimension}"
        self._bucket = lru_cache(maxsize=200_000)(self._bucket_uncached)
        self._empty = np.zeros(dimension, dtype=np.float32)
        index, sign = self._bucket_uncached(_EMPTY_FEATURE)
        self._empty[index] = sign

    def _bucket_uncached(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dimension, (1.0 if (value >> 63) & 1 else -1.0)

    def embed_one(self, text: str) -> np.ndarray:
        words = tokens(text)
        vector = np.zeros(self.dimension, dtype=np.float32)
        for word in words:
            index, sign = self._bucket(word)
            vector[index] += sign
        for first, second in itertools.pairwise(words):
            index, sign = self._bucket(f"{first} {second}")
            vector[index] += sign * _BIGRAM_WEIGHT
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # no words, or (very rarely) features that cancelled out
            return self._empty.copy()
        vector /= norm
        return vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.embed_one(text)
        return out
