"""Read path: a query becomes a vector and keywords, the store answers tenant-scoped, cards get packed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from episodic.core.confidence import ConfidenceRule
from episodic.kernel.errors import ConfigError, InvalidArgumentError, NotFoundError
from episodic.kernel.memory import Memory
from episodic.kernel.models import CardRecord, SearchFilters, SearchHit, check_tenant
from episodic.kernel.ports import Reranker

MAX_QUERY_CHARS = 2000
log = logging.getLogger(__name__)
# second-stage calls run here so a search can stop waiting for one at its deadline (a few at once: the
# server's connections search in parallel; a late call is cancelled where the stage can be)
_second_stage = ThreadPoolExecutor(max_workers=4, thread_name_prefix="second-stage")


def search_traces(
    memory: Memory,
    tenant_id: str,
    query: str,
    k: int | None = None,
    filters: SearchFilters | None = None,
) -> list[SearchHit]:
    """The closest past episodes for a problem, best first, each with its confidence (episodic.core.confidence:
    strong, weak, faint, or None below the faint bar; faces show what `confidence.shown` keeps); [] when
    nothing clears the similarity floor. With a second stage (memory.reranker), the first stage's best
    `depth` candidates are reordered by it before the k best are kept and labelled."""
    check_tenant(tenant_id)
    k = memory.settings.default_k if k is None else k
    if not 1 <= k <= memory.settings.max_k:
        raise InvalidArgumentError(f"k must be between 1 and {memory.settings.max_k}, got {k}")
    query = (query or "").strip()
    if not query:
        raise InvalidArgumentError("query must be a non-empty description of the problem")
    from episodic.scrub import Scrubber  # here: `show` and `get_episode` never scrub

    # a pasted secret in a query must not reach a remote embedder either
    query = Scrubber.from_settings(memory.settings).scrub(query[:MAX_QUERY_CHARS])
    filters = filters or SearchFilters()
    wanted = memory.settings.query_rendering
    if wanted != "all":
        if wanted not in memory.settings.renderings:
            raise ConfigError(
                f"query rendering {wanted!r} is not indexed (renderings: {memory.settings.renderings})"
            )
        filters = filters.model_copy(update={"renderings": [wanted]})
    vector = memory.embedder.embed([query])[0]
    reranker = memory.reranker
    depth = max(k, reranker.depth) if reranker is not None else k
    hits = memory.store.query(
        tenant_id,
        vector,
        query,
        depth,
        filters,
        memory.manifest,
        memory.min_similarity,
    )
    if reranker is not None and len(hits) > 1:
        hits = second_stage(reranker, query, hits, memory.settings.rerank_seconds)
    # labelled before the cut: a judged hit's gate reads every judged hit (episodic.core.full_card_gate)
    return confidence_rule(memory).label(hits[:depth])[:k]


def second_stage(
    reranker: Reranker, query: str, hits: Sequence[SearchHit], seconds: float
) -> list[SearchHit]:
    """The reranker's order when it answers within `seconds` (0: however long it takes); otherwise, or when
    it fails, the first stage's answer as it was (a slow judge must not silence the hook)."""
    if seconds <= 0:
        return reranker.rerank(query, hits)
    call = _second_stage.submit(reranker.rerank, query, hits)
    try:
        return call.result(timeout=seconds)
    except FutureTimeout:
        reranker.cancel()
        log.warning(
            "the %s reranker timed out after %.2f s; the first stage's order kept", reranker.name, seconds
        )
    except Exception as exc:  # an adapter's failure never fails a search
        log.warning("the %s reranker failed (%s); the first stage's order kept", reranker.name, exc)
    return list(hits)


def confidence_rule(memory: Memory) -> ConfidenceRule:
    settings = memory.settings
    return ConfidenceRule(
        settings.strong_score,
        settings.weak_score,
        memory.min_similarity,
        faint_score=settings.faint_score,
        judge_strong=settings.judge_strong,
        judge_weak=settings.judge_weak,
        judge_gate=settings.judge_gate,
        min_keyword=settings.strong_min_keyword,
    )


def resolve_session_id(memory: Memory, tenant_id: str, session_id: str) -> str:
    """The tenant's session id that `session_id` is or uniquely starts (as git takes a short hash)."""
    from episodic.sessions.ids import card_session_id

    return card_session_id(memory, tenant_id, session_id)


def get_episode(memory: Memory, tenant_id: str, session_id: str) -> CardRecord:
    check_tenant(tenant_id)
    session_id = resolve_session_id(memory, tenant_id, session_id)
    record = memory.store.get(tenant_id, session_id)
    if record is None:
        from episodic.sessions.ids import not_found

        raise NotFoundError(not_found("episode with session id", session_id))
    if record.review is not None and record.review.state.value == "vetoed":  # episodic.cards.review
        raise NotFoundError(f"episode {session_id!r} was vetoed by a reviewer")
    return record
