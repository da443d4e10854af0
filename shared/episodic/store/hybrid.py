"""Hybrid ranking pieces shared by stores: a safe keyword query and reciprocal-rank fusion.

The threshold rule (DESIGN invariant 3, "silence beats noise"): a session survives when its best
cosine similarity is >= min_similarity. One exception lets an exact keyword hit through: the session
ranked first by the keyword half survives with a similarity >= KEYWORD_RESCUE_FACTOR x min_similarity
(an error code or tool name the embedder blurs). Anything weaker on both halves returns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

RRF_K = 60
KEYWORD_RESCUE_FACTOR = 0.5
MAX_QUERY_TERMS = 32  # a pasted log must not become a 5,000-term OR
# Terms in more than half of the cards get no weight from FTS5's bm25 (its idf,
# ln((N - n + 0.5) / (n + 0.5)), is <= 0 there and clamped to 1e-6) yet make it score most of the
# index: the keyword half skips them. A lower cut drops words that do rank (on the dev set, 5% of
# the cards cost hybrid recall@3 0.74 -> 0.69: a team's shared vocabulary still discriminates).
COMMON_FRACTION = 0.5
COMMON_FLOOR = 20  # ... unless the index is small enough that scoring everything is cheap anyway
_TERM = re.compile(r"[^\W_]+", re.UNICODE)  # the tokens FTS5's unicode61 tokenizer makes (no "_")


def query_terms(text: str) -> list[str]:
    """Distinct lowercased word tokens of the user's text, at most MAX_QUERY_TERMS, in order."""
    terms: list[str] = []
    for term in _TERM.findall(text.lower()):
        if term not in terms:
            terms.append(term)
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return terms


def fts_match(terms: list[str]) -> str | None:
    """Terms as an FTS5 query of quoted strings joined by OR; never FTS syntax (no AND/NEAR/col:/*).

    The terms hold only letters and digits, so no quote can escape: `foo AND (bar` becomes
    `"foo" OR "and" OR "bar"`. None when there is nothing to search for.
    """
    return " OR ".join(f'"{term}"' for term in terms) if terms else None


def fts_query(text: str) -> str | None:
    return fts_match(query_terms(text))


def selective_terms(terms: list[str], doc_counts: Mapping[str, int], total_docs: int) -> list[str]:
    """The terms worth a keyword search: present in the index, and not in most of its cards."""
    limit = max(COMMON_FRACTION * total_docs, COMMON_FLOOR)
    return [t for t in terms if 0 < doc_counts.get(t, 0) <= limit]


@dataclass(frozen=True)
class Fused:
    key: int
    score: float
    similarity: float
    rendering: str | None
    keyword_rank: int | None


def fuse(
    vector_ranked: list[int],
    keyword_ranked: list[int],
    similarity: Mapping[int, tuple[float, str | None]],
    *,
    k: int,
    min_similarity: float,
    keyword_weight: float,
    rrf_k: int = RRF_K,
) -> list[Fused]:
    """RRF over the two rankings (keys best first), then the threshold rule above; at most k, best first.

    `similarity` maps every candidate key to (best cosine, best rendering).
    """
    vector_rank = {key: rank for rank, key in enumerate(vector_ranked, start=1)}
    keyword_rank = {key: rank for rank, key in enumerate(keyword_ranked, start=1)}
    fused: list[Fused] = []
    for key in vector_rank.keys() | keyword_rank.keys():
        sim, rendering = similarity[key]
        kw = keyword_rank.get(key)
        rescued = kw == 1 and sim >= KEYWORD_RESCUE_FACTOR * min_similarity
        if sim < min_similarity and not rescued:
            continue
        score = 0.0
        if key in vector_rank:
            score += 1.0 / (rrf_k + vector_rank[key])
        if kw is not None:
            score += keyword_weight / (rrf_k + kw)
        fused.append(Fused(key, score, sim, rendering, kw))
    fused.sort(key=lambda f: (-f.score, -f.similarity, f.key))
    return fused[:k]
