"""Okapi BM25 (k1=1.2, b=0.75) over plain token lists, in numpy: the keyword-search baseline."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

_TOKEN_RE = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of letters and digits: identifiers split at _ . / - (so `read_file` → read, file)."""
    return _TOKEN_RE.findall(text.lower())


class BM25Index:
    """Inverted index; a document's score is the sum over the query's distinct terms of
    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)),
    with the non-negative idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.n = len(documents)
        self.lengths = np.array([len(d) for d in documents], dtype=np.float64)
        average = float(self.lengths.mean()) if self.n and self.lengths.sum() else 1.0
        self._norm = k1 * (1.0 - b + b * self.lengths / average)  # per-document length normaliser
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for index, doc in enumerate(documents):
            for term, tf in Counter(doc).items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(index)
                tfs.append(tf)
        self._postings = {
            term: (np.array(docs, dtype=np.int64), np.array(tfs, dtype=np.float64))
            for term, (docs, tfs) in postings.items()
        }

    def idf(self, term: str) -> float:
        posting = self._postings.get(term)
        df = 0 if posting is None else len(posting[0])
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        scores = np.zeros(self.n, dtype=np.float64)
        for term in dict.fromkeys(query_terms):
            posting = self._postings.get(term)
            if posting is None:
                continue
            docs, tfs = posting
            scores[docs] += self.idf(term) * tfs * (self.k1 + 1.0) / (tfs + self._norm[docs])
        return scores
