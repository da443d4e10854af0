"""The keyword half over one tenant's cards: BM25 with that tenant's own statistics, in memory.

FTS5's `bm25()` takes its document counts and average length from the whole table, i.e. from every
tenant, so one tenant's writes could move another's ranking. This index holds one tenant's postings,
built from the stored keyword texts whenever the tenant's write generation moves (like its vector
matrix), and scores with FTS5's formula and constants (fts5_aux.c: k1 = 1.2, b = 0.75, idf clamped to
1e-6) and FTS5's unicode61 tokens (letters and digits, lower case, diacritics removed).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

K1, B = 1.2, 0.75
IDF_FLOOR = 1e-6
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """Lower case without diacritics (unicode61 `remove_diacritics`)."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(fold(text))


@dataclass
class TenantKeywords:
    """Postings (term -> sessions holding it, term frequency there) and card lengths of one tenant."""

    sessions: int
    lengths: np.ndarray  # (S,) tokens per card
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def build(cls, bodies: Iterable[tuple[int, str]], sessions: int) -> TenantKeywords:
        """bodies: (session index, keyword text) for the tenant's sessions."""
        lengths = np.zeros(sessions, dtype=np.float64)
        lists: dict[str, tuple[list[int], list[int]]] = {}
        for index, body in bodies:
            words = tokens(body)
            lengths[index] = len(words)
            for term, count in Counter(words).items():
                where, freq = lists.setdefault(term, ([], []))
                where.append(index)
                freq.append(count)
        postings = {
            term: (np.asarray(where, dtype=np.int64), np.asarray(freq, dtype=np.float64))
            for term, (where, freq) in lists.items()
        }
        return cls(sessions=sessions, lengths=lengths, postings=postings)

    def doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        return {t: len(self.postings[t][0]) if t in self.postings else 0 for t in terms}

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """(S,) BM25 of every card for the terms (0 where none matches)."""
        out = np.zeros(self.sessions, dtype=np.float64)
        if not self.sessions:
            return out
        average = float(self.lengths.mean()) or 1.0
        norm = K1 * (1 - B + B * self.lengths / average)
        for term in dict.fromkeys(terms):
            if term not in self.postings:
                continue
            where, freq = self.postings[term]
            idf = math.log((self.sessions - len(where) + 0.5) / (len(where) + 0.5))
            idf = idf if idf > 0 else IDF_FLOOR
            out[where] += idf * freq * (K1 + 1) / (freq + norm[where])
        return out
