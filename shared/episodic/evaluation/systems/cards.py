"""Card systems: each rendering alone, and the project's default retrieval through the real store."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.systems.base import RetrievalSystem, SystemContext, rank_by_scores, register_system
from episodic.kernel.models import LOCAL_TENANT, OPENING, Outcome, SearchFilters, SearchHit
from episodic.store.render import render


def card_vectors(context: SystemContext, corpus: EvalCorpus, rendering: str) -> tuple[list[str], np.ndarray]:
    """The ids of the sessions with a card and one vector per card for the rendering (shared per run)."""

    def build() -> tuple[list[str], np.ndarray]:
        ids = list(corpus.cards)
        texts = [render(corpus.cards[sid], rendering) for sid in ids]
        return ids, context.embed(texts, f"cards: embedding {rendering}")

    return context.shared(f"card-vectors:{rendering}", build)


class RenderingSystem(RetrievalSystem):
    """Cosine between the query and one rendering of each card (sessions without a card: a miss)."""

    needs_cards = True
    rendering: str

    def build(self, corpus: EvalCorpus) -> None:
        self.ids, self.vectors = card_vectors(self.context, corpus, self.rendering)

    def rank(self, query: str) -> list[str]:
        return self.rank_many([query])[0]

    def rank_many(self, queries: Sequence[str]) -> list[list[str]]:
        query_vectors = self.context.embedder.embed(list(queries))
        return [rank_by_scores(self.ids, self.vectors @ v) for v in query_vectors]


@register_system
class StructSystem(RenderingSystem):
    name = "struct"
    rendering = "struct"
    description = "card rendering `struct` alone (problem + steps)"


@register_system
class SemanticSystem(RenderingSystem):
    name = "semantic"
    rendering = "semantic"
    description = "card rendering `semantic` alone (problem + key decisions + insight)"


@register_system
class ReflectSystem(RenderingSystem):
    name = "reflect"
    rendering = "reflect"
    description = "card rendering `reflect` alone (problem + dead ends + misleading intuitions + checks)"


def default_memory(context: SystemContext, corpus: EvalCorpus) -> Any:
    """The production read path on a scratch SQLite index of every card (the settings' renderings).

    It ranks every session: k is the corpus size and the similarity floor is off (-1), so the
    production threshold is applied afterwards, as a reported figure, not as a filter on the ranks. The
    second stage (settings.reranker) reorders the first stage's best candidates as in production.
    """

    def build() -> Any:
        from episodic.assembly import build_memory, sqlite_store_at
        from episodic.cards.write import session_opening, store_card

        settings = context.settings.model_copy(
            update={"max_k": max(len(corpus.cards), 1), "min_similarity": -1.0}
        )
        store = sqlite_store_at(settings, context.workdir / "eval-index.sqlite3")
        memory = build_memory(settings, embedder=context.embedder, distiller=context.distiller, store=store)
        if memory.reranker is not None:  # its cost is reported beside the figures it changed
            from episodic.evaluation.second_stage import TimedReranker

            memory = replace(memory, reranker=TimedReranker(memory.reranker))
        store.ensure_manifest(memory.manifest)
        distiller = corpus.distiller
        assert distiller is not None, "distill_corpus runs before card systems are built"
        for rendering in settings.renderings:  # bulk first (parallel, cached): store_card then hits the cache
            if rendering != OPENING:
                card_vectors(context, corpus, rendering)
        openings = [
            session_opening(memory, corpus.trajectories[sid], corpus.card_distillers.get(sid, distiller))
            for sid in corpus.cards
        ]
        context.embed([text for text in openings if text], "cards: embedding opening words")
        context.progress.start("default: indexing cards", len(corpus.cards))
        for session_id, card in corpus.cards.items():
            store_card(
                memory,
                LOCAL_TENANT,
                card,
                session_id=session_id,
                distiller=corpus.card_distillers.get(session_id, distiller),
                trajectory=corpus.trajectories[session_id],
            )
            context.progress.advance()
        return memory

    return context.shared("default-memory", build)


@register_system
class DefaultSystem(RetrievalSystem):
    """`episodic.core.search.search_traces` as the MCP tool runs it (hybrid, fused), all outcomes.

    Ranks come from the store with the similarity floor off and k = corpus size (the store fuses at
    most its vector and keyword candidates, so a target outside both lists is a miss). Each query
    is asked a second time with the production threshold and k, to report what that floor drops.
    """

    name = "hybrid"
    description = (
        "the default retrieval: search_traces on the SQLite store (z-scored weighted mean of the rendering "
        "cosines, offline cards' opening words included, + BM25, score-fused), all outcomes"
    )
    needs_cards = True
    verified_only = False

    def build(self, corpus: EvalCorpus) -> None:
        self.memory = default_memory(self.context, corpus)
        production = self.context.settings.model_copy(update={"max_k": max(self.context.k, 1)})
        self.production = replace(self.memory, settings=production)
        self.threshold = self.production.min_similarity
        self.size = max(len(corpus.cards), 1)
        self._hits: list[SearchHit] = []
        self._filters = SearchFilters(include_unverified=not self.verified_only)

    def rank(self, query: str) -> list[str]:
        from episodic.core.search import search_traces

        self._hits = search_traces(self.memory, LOCAL_TENANT, query, k=self.size, filters=self._filters)
        return [hit.record.session_id for hit in self._hits]

    def query_notes(self, query: str, target: str) -> dict[str, Any]:
        from episodic.core.search import search_traces

        notes: dict[str, Any] = {}
        record = self.memory.store.get(LOCAL_TENANT, target)
        if record is not None:
            notes["outcome"] = record.card.outcome.value
        for hit in self._hits:
            if hit.record.session_id == target:
                notes["similarity"] = round(hit.similarity, 4)
        kept = search_traces(self.production, LOCAL_TENANT, query, k=self.context.k, filters=self._filters)
        notes["in_production_top_k"] = any(h.record.session_id == target for h in kept)
        return notes

    def summary_notes(
        self, per_query: Sequence[dict[str, Any]], ranks: Sequence[int | None], k: int
    ) -> dict[str, Any]:
        hits = [n for n, r in zip(per_query, ranks, strict=True) if r is not None and r <= k]
        dropped = sum(1 for n in hits if not n.get("in_production_top_k"))
        kept = sum(1 for n in per_query if n.get("in_production_top_k"))
        unverified = sum(1 for n in per_query if n.get("outcome") not in (None, Outcome.VERIFIED.value))
        n = len(ranks)
        share = kept / n if n else 0.0
        return {
            "production_threshold": round(self.threshold, 4),
            f"top{k}_hits_dropped_by_threshold": dropped,
            f"recall@{k}_with_threshold": round(share, 4),
            f"se_recall@{k}_with_threshold": round(math.sqrt(share * (1 - share) / n), 4) if n else 0.0,
            "targets_not_verified": unverified,
        }


@register_system
class DefaultVerifiedSystem(DefaultSystem):
    """The same path with the production default filter: verified episodes only."""

    name = "hybrid-verified"
    description = "the default retrieval restricted to verified episodes (the hook's filter)"
    verified_only = True
