"""Hybrid ranking pieces shared by stores: a safe keyword query and reciprocal-rank fusion.

The threshold rule (DESIGN invariant 3, "silence beats noise"): a session survives when its best
cosine similarity is >= min_similarity. One exception lets an exact keyword hit through: the session
ranked first by the keyword half survives with a similarity >= KEYWORD_RESCUE_FACTOR x min_similarity
(an error code or tool name the embedder blurs). Anything weaker on both halves returns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
# FTS5 scores every posting of every query term: on a large index the most common remaining terms
# are dropped first until the postings fit this budget (keeps p50 search in milliseconds at 10k cards;
# a small index, like the 158-session dev set, never reaches it).
POSTING_BUDGET = 1500
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
    kept = [t for t in terms if 0 < doc_counts.get(t, 0) <= limit]
    postings = sum(doc_counts[t] for t in kept)
    for term in sorted(kept, key=lambda t: -doc_counts[t]):
        if postings <= POSTING_BUDGET or len(kept) == 1:
            break
        kept.remove(term)
        postings -= doc_counts[term]
    return kept


@dataclass(frozen=True)
class Fused:
    key: int
    score: float
    similarity: float
    rendering: str | None
    keyword_rank: int | None


def fuse(
    vector_rankings: Sequence[list[int]],
    keyword_ranked: list[int],
    similarity: Mapping[int, tuple[float, str | None]],
    *,
    k: int,
    min_similarity: float,
    keyword_weight: float,
    rrf_k: int = RRF_K,
) -> list[Fused]:
    """RRF over one ranking per rendering and the keyword ranking (keys best first), then the
    threshold rule above; at most k, best first.

    The rendering rankings share a weight of 1 (each 1/n), the keyword ranking has keyword_weight: a
    session near the top for several renderings beats one that a single rendering happens to match
    (on the dev set, better recall@1 and MRR than ranking by the best cosine alone). `similarity` maps
    every candidate key to (best cosine over its renderings, best rendering).
    """
    share = 1.0 / max(len(vector_rankings), 1)
    scores: dict[int, float] = {}
    for ranking in vector_rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + share / (rrf_k + rank)
    keyword_rank = {key: rank for rank, key in enumerate(keyword_ranked, start=1)}
    for key, rank in keyword_rank.items():
        scores[key] = scores.get(key, 0.0) + keyword_weight / (rrf_k + rank)
    fused: list[Fused] = []
    for key, score in scores.items():
        sim, rendering = similarity[key]
        kw = keyword_rank.get(key)
        rescued = kw == 1 and sim >= KEYWORD_RESCUE_FACTOR * min_similarity
        if sim < min_similarity and not rescued:
            continue
        fused.append(Fused(key, score, sim, rendering, kw))
    fused.sort(key=lambda f: (-f.score, -f.similarity, f.key))
    return fused[:k]
