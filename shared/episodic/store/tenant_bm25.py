"""BM25 over one tenant's cards only (issue 14: another tenant's writes must not move this one's ranking).

FTS5's own `bm25()` takes its document counts and average length from the whole table, i.e. from every
tenant; these are the same formula and constants (fts5_aux.c: k1 = 1.2, b = 0.75, idf clamped to 1e-6)
over statistics of the caller's tenant: its card count, its average card length (cached per write
generation) and, per query term, how many of its cards hold the term.
"""

from __future__ import annotations

import math
import re
import sqlite3
import unicodedata
from collections import Counter
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

K1, B = 1.2, 0.75
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)  # unicode61: runs of letters and digits


def fold(text: str) -> str:
    """Lower case without diacritics (unicode61 `remove_diacritics 2`)."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(fold(text))


@dataclass(frozen=True)
class TenantLengths:
    generation: int
    docs: int
    average: float


def tenant_lengths(conn: sqlite3.Connection, tenant: str, generation: int) -> TenantLengths:
    """The tenant's card count and average keyword-text length in tokens (one scan per generation)."""
    docs = total = 0
    for (body,) in conn.execute("SELECT body FROM cards_fts WHERE tenant_id = ?", (tenant,)):
        docs += 1
        total += len(_TOKEN.findall(body))
    return TenantLengths(generation, docs, total / docs if docs else 0.0)


def tenant_doc_counts(
    conn: sqlite3.Connection, terms: Iterable[str], tenant_rowids: Container[int]
) -> dict[str, int]:
    """How many of the tenant's cards hold each term: the term's doclist (rowids only, no row reads)
    intersected with the tenant's rowids (terms are letters and digits: safe to quote)."""
    return {
        term: sum(
            1
            for (rowid,) in conn.execute(
                "SELECT rowid FROM cards_fts WHERE cards_fts MATCH ?", (f'"{term}"',)
            )
            if rowid in tenant_rowids
        )
        for term in terms
    }


def rank(
    candidates: Sequence[tuple[int, str]],
    terms: Sequence[str],
    doc_counts: dict[str, int],
    lengths: TenantLengths,
    limit: int,
) -> list[int]:
    """Rowids of the candidates (rowid, body), best BM25 first (ties by rowid, like a stable sort)."""
    wanted = {fold(t): t for t in terms}
    idf: dict[str, float] = {}
    for folded, term in wanted.items():
        hits = doc_counts.get(term, 0)
        value = math.log((lengths.docs - hits + 0.5) / (hits + 0.5)) if lengths.docs else 0.0
        idf[folded] = value if value > 0 else 1e-6
    average = lengths.average or 1.0
    scored: list[tuple[float, int]] = []
    for rowid, body in candidates:
        words = tokens(body)
        freq = Counter(w for w in words if w in idf)
        norm = K1 * (1 - B + B * len(words) / average)
        score = sum(idf[w] * f * (K1 + 1) / (f + norm) for w, f in freq.items())
        scored.append((-score, rowid))
    scored.sort()
    return [rowid for _, rowid in scored[:limit]]
