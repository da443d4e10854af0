"""BM25 over one tenant's cards only (issue 14: another tenant's writes must not move this one's ranking).

FTS5's own `bm25()` takes its document counts and average length from the whole table, i.e. from every
tenant; these are the same formula and constants (fts5_aux.c: k1 = 1.2, b = 0.75, idf clamped to 1e-6)
over statistics of the caller's tenant: its card count, its average card length (cached per write
generation) and, per query term, how many of its cards hold the term; term frequencies come from the
FTS index itself (an `fts5vocab` instance table in the connection's temp schema: no file change).
"""

from __future__ import annotations

import math
import re
import sqlite3
import unicodedata
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


@dataclass(frozen=True)
class TenantLengths:
    generation: int
    docs: int
    average: float
    of: dict[int, int]  # rowid -> tokens in its keyword text


def tenant_lengths(conn: sqlite3.Connection, tenant: str, generation: int) -> TenantLengths:
    """The tenant's card count and keyword-text lengths in tokens (one scan per write generation)."""
    of = {
        int(rowid): len(_TOKEN.findall(body))
        for rowid, body in conn.execute("SELECT rowid, body FROM cards_fts WHERE tenant_id = ?", (tenant,))
    }
    return TenantLengths(generation, len(of), sum(of.values()) / len(of) if of else 0.0, of)


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


def _term_frequencies(conn: sqlite3.Connection, term: str) -> dict[int, int]:
    """rowid -> occurrences of the (folded) term, from FTS5's own index (a per-connection temp table)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.cards_instances USING fts5vocab(main, cards_fts, instance)"
    )
    rows = conn.execute(
        "SELECT doc, COUNT(*) FROM temp.cards_instances WHERE term = ? GROUP BY doc", (fold(term),)
    )
    return {int(doc): int(n) for doc, n in rows}


def rank(
    conn: sqlite3.Connection,
    candidates: Sequence[int],
    terms: Sequence[str],
    doc_counts: dict[str, int],
    lengths: TenantLengths,
    limit: int,
) -> list[int]:
    """Candidate rowids, best BM25 first (ties by rowid), term frequencies read from the FTS index."""
    average = lengths.average or 1.0
    scores = dict.fromkeys(candidates, 0.0)
    for term in dict.fromkeys(terms):
        hits = doc_counts.get(term, 0)
        idf = math.log((lengths.docs - hits + 0.5) / (hits + 0.5)) if lengths.docs else 0.0
        idf = idf if idf > 0 else 1e-6
        for rowid, freq in _term_frequencies(conn, term).items():
            if rowid in scores:
                norm = K1 * (1 - B + B * lengths.of.get(rowid, 0) / average)
                scores[rowid] += idf * freq * (K1 + 1) / (freq + norm)
    return sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[:limit]
