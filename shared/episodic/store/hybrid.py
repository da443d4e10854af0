"""Hybrid ranking shared by stores: a safe keyword query and score fusion of the two halves.

Ranking (chosen on the dev set with both card sets, checked on a two-fold split: docs/evaluation.md):
  score = z(weighted mean cosine over the renderings) + keyword_weight x bm25 / best bm25
where z standardises the blended cosine over the candidate pool (every allowed session in SQLite), so the
vector half is in units of "how far above the crowd" whatever the embedder's cosine scale, and the keyword
half adds at most keyword_weight for the best keyword match (rank fusion threw that magnitude away).

The threshold rule (DESIGN invariant 3, "silence beats noise"): a session survives when its best cosine is
>= min_similarity, or when the keyword half ranks it first and its cosine is >= KEYWORD_RESCUE_FACTOR x
min_similarity (an error code or tool name the embedder blurs). Anything weaker returns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from episodic.kernel.models import OPTIONAL_RENDERINGS

KEYWORD_RESCUE_FACTOR = 0.5
CANDIDATES = 50  # vector candidates before fusion: far more than k (<= 5), few enough to stay fast
MAX_QUERY_TERMS = 32  # a pasted log must not become a 5,000-term OR
# Terms in more than half of the cards get no weight from BM25 (FTS5's idf,
# ln((N - n + 0.5) / (n + 0.5)), is <= 0 there and clamped to 1e-6) yet make it score most of the
# index: the keyword half skips them. A lower cut drops words that do rank (a team's shared vocabulary still
# discriminates: docs/retrieval.md).
COMMON_FRACTION = 0.5
COMMON_FLOOR = 20  # ... unless the index is small enough that scoring everything is cheap anyway
# BM25 scores every posting of every query term: on a large index the most common remaining terms
# are dropped first until the postings fit this budget (search stays fast on a large index; a small one
# never reaches it: docs/performance.md).
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
    keyword_score: float = (
        0.0  # the keyword half's raw relevance (BM25 with the tenant's own IDF; 0: no match)
    )


def rendering_weights(renderings: Sequence[str], weights: Mapping[str, float]) -> np.ndarray:
    """The weight of each rendering (in order); equal weights when none of them has a positive weight."""
    values = np.array([max(float(weights.get(r, 0.0)), 0.0) for r in renderings], dtype=np.float64)
    if not len(values) or values.sum() <= 0:
        return np.full(len(renderings), 1.0 / max(len(renderings), 1))
    return values / values.sum()


def blend(per_rendering: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(R, S) cosines (-inf where a session lacks a rendering) to one weighted mean per session; a session
    with none of the weighted renderings keeps its best cosine."""
    present = np.isfinite(per_rendering)
    w = weights[:, None] * present
    total = w.sum(axis=0)
    weighted = (w * np.where(present, per_rendering, 0.0)).sum(axis=0)
    best = per_rendering.max(axis=0)
    return np.where(total > 0, weighted / np.maximum(total, 1e-12), best).astype(np.float64)


def standardise(blended: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """(x - mean) / std over the pool's finite scores; a pool of one (or all equal) gives zeros."""
    values = blended[pool] if len(pool) else blended
    values = values[np.isfinite(values)]
    if values.size < 2:
        return np.zeros_like(blended)
    spread = float(values.std())
    if not np.isfinite(spread) or spread <= 1e-12:
        return np.zeros_like(blended)
    return (blended - float(values.mean())) / spread


def fuse(
    standardised: Mapping[int, float],
    keyword_scores: Sequence[tuple[int, float]],
    similarity: Mapping[int, tuple[float, str | None]],
    *,
    k: int,
    min_similarity: float,
    keyword_weight: float,
) -> list[Fused]:
    """Score fusion of the two halves (module docstring), then the threshold rule; at most k, best first.

    `standardised` maps each vector candidate to its z-scored blended cosine; `keyword_scores` is the keyword
    half as (key, bm25 relevance, higher is better), best first; `similarity` maps every candidate of either
    half to (best cosine over its renderings, best rendering). A keyword-only candidate's vector half is its
    own z-score when given, else the lowest of the vector candidates.
    """
    floor = min(standardised.values(), default=0.0)
    best_keyword = max((score for _, score in keyword_scores), default=0.0)
    keyword_part: dict[int, float] = {}
    keyword_rank: dict[int, int] = {}
    keyword_raw: dict[int, float] = {}
    for rank, (key, score) in enumerate(keyword_scores, start=1):
        keyword_rank.setdefault(key, rank)
        keyword_raw.setdefault(key, max(score, 0.0))
        if best_keyword > 0:
            keyword_part[key] = keyword_weight * max(score, 0.0) / best_keyword
    fused: list[Fused] = []
    for key in set(standardised) | set(keyword_rank):
        sim, rendering = similarity[key]
        kw = keyword_rank.get(key)
        rescued = kw == 1 and sim >= KEYWORD_RESCUE_FACTOR * min_similarity
        if sim < min_similarity and not rescued:
            continue
        score = standardised.get(key, floor) + keyword_part.get(key, 0.0)
        fused.append(Fused(key, score, sim, rendering, kw, keyword_raw.get(key, 0.0)))
    fused.sort(key=lambda f: (-f.score, -f.similarity, f.key))
    return fused[:k]


def top_indices(scores: np.ndarray, pool: np.ndarray, depth: int) -> list[int]:
    """The `depth` best pool positions with a finite score, best first (stable on ties)."""
    pool = pool[np.isfinite(scores[pool])]
    if len(pool) > depth:
        pool = pool[np.argpartition(-scores[pool], depth - 1)[:depth]]
    return [int(i) for i in pool[np.argsort(-scores[pool], kind="stable")]]


def rank_pool(
    cosines: np.ndarray,
    weights: np.ndarray,
    renderings: Sequence[str],
    keyword: Sequence[tuple[int, float]],
    *,
    k: int,
    depth: int,
    min_similarity: float,
    keyword_weight: float,
) -> list[Fused]:
    """The one ranking rule of every store over a candidate pool (positions 0..N-1, see store.base).

    The blended cosine is standardised over the pool; the `depth` best by it and every keyword hit are
    fused (module docstring); each hit's similarity is its best cosine, with that rendering."""
    if not cosines.size:
        return []
    blended = blend(cosines, weights)
    pool = np.flatnonzero(np.isfinite(blended))
    standardised_all = standardise(blended, pool)
    # a hit's similarity and best rendering are its card's: raw session text (an optional rendering) votes in
    # the blend but does not move the threshold, which was set on card renderings
    shown = [row for row, name in enumerate(renderings) if name not in OPTIONAL_RENDERINGS] or list(
        range(len(renderings))
    )
    card_cosines = cosines[shown]
    best = card_cosines.max(axis=0)
    candidates = set(top_indices(blended, pool, depth)).union(i for i, _ in keyword)
    return fuse(
        {i: float(standardised_all[i]) for i in candidates},
        keyword,
        {i: (float(best[i]), renderings[shown[int(np.argmax(card_cosines[:, i]))]]) for i in candidates},
        k=k,
        min_similarity=min_similarity,
        keyword_weight=keyword_weight,
    )
