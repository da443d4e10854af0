"""One evaluation run: corpus → systems → ranks → metrics; the CLI and scripts call `run_evaluation`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from episodic.cards.files import CardFolder
from episodic.distill.readability import check_cards
from episodic.evaluation.cache import WorkCache
from episodic.evaluation.cardsets import CardSet, distilled_set, fold_of, folder_set, read_folder
from episodic.evaluation.corpus import EvalCorpus, check_folders, distill_corpus, load_corpus
from episodic.evaluation.injection import InjectionView, Negative, injection_view, read_negatives
from episodic.evaluation.metrics import Comparison, SystemMetrics, compare_all, rank_of, summarize
from episodic.evaluation.progress import Progress
from episodic.evaluation.queries import EvalQuery, read_queries
from episodic.evaluation.second_stage import TimedReranker
from episodic.evaluation.systems import SystemContext, select_systems
from episodic.evaluation.systems.cards import default_memory
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.ports import Distiller, Embedder
from episodic.kernel.settings import Settings


class QueryResult(BaseModel):
    id: str
    query: str
    session_id: str
    difficulty: str | None = None
    fold: str = ""  # the two-fold split by target session (cardsets.fold_of)
    in_corpus: bool
    ranks: dict[str, int | None]  # system -> 1-based rank of the target (None: not retrieved)
    notes: dict[str, dict[str, Any]] = Field(default_factory=dict)  # system -> extra facts


class SystemResult(BaseModel):
    name: str
    description: str
    metrics: SystemMetrics
    by_difficulty: dict[str, SystemMetrics] = Field(default_factory=dict)
    by_fold: dict[str, SystemMetrics] = Field(default_factory=dict)
    card_set: str | None = None  # the card set a card system ran on (None: raw baselines)
    notes: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0  # build + rank time in this run


class EvalResult(BaseModel):
    k: int
    embedder: str
    systems: dict[str, SystemResult]
    queries: list[QueryResult]
    comparisons: list[Comparison]
    corpus: dict[str, Any]
    missing_targets: list[str]  # ids of queries whose target session is not in the corpus
    seconds: dict[str, float]
    command: str = ""
    injection: dict[str, InjectionView] = Field(default_factory=dict)  # card set -> what the hook injects
    readability: dict[str, dict[str, Any]] = Field(default_factory=dict)  # card set -> distill.readability
    # card set -> what the second stage cost (evaluation.second_stage); empty when it is off
    second_stage: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The machine-readable object: systems with metrics and SE, per-query ranks, and context."""
        systems: dict[str, Any] = {}
        for name, result in self.systems.items():
            entry = result.metrics.as_json()
            if result.by_difficulty:
                entry["by_difficulty"] = {g: m.as_json() for g, m in result.by_difficulty.items()}
            if result.by_fold:
                entry["by_fold"] = {g: m.as_json() for g, m in result.by_fold.items()}
            if result.card_set:
                entry["card_set"] = result.card_set
            if result.notes:
                entry["notes"] = result.notes
            systems[name] = entry
        return {
            "systems": systems,
            "queries": [q.model_dump(exclude_none=False) for q in self.queries],
            "k": self.k,
            "embedder": self.embedder,
            "comparisons": [{**c.model_dump(), "statement": c.statement} for c in self.comparisons],
            "corpus": self.corpus,
            "missing_targets": self.missing_targets,
            "seconds": self.seconds,
            "command": self.command,
            **({"readability": self.readability} if self.readability else {}),
            **({"second_stage": self.second_stage} if self.second_stage else {}),
            **(
                {"injection": {k: v.model_dump() for k, v in self.injection.items()}}
                if self.injection
                else {}
            ),
        }


def default_embedder(settings: Settings) -> Embedder:
    """The configured embedder, behind a content-hash cache: `embedding_cache_dir` when set, else the home folder's."""
    from episodic.assembly import build_embedder
    from episodic.embed.cache import CachedEmbedder

    embedder = build_embedder(settings)
    if isinstance(embedder, CachedEmbedder):  # embedding_cache_dir is set: that cache, not a second one
        return embedder
    return CachedEmbedder(embedder, settings.cache_dir / "embeddings")


def _by_group(
    queries: Sequence[QueryResult], system: str, k: int, attribute: str
) -> dict[str, SystemMetrics]:
    groups: dict[str, list[int | None]] = {}
    for q in queries:
        group = getattr(q, attribute)
        if group:
            groups.setdefault(group, []).append(q.ranks[system])
    return {group: summarize(ranks, k) for group, ranks in sorted(groups.items())}


def _card_sets(
    corpus: EvalCorpus, cards_dir: Path | None, read: CardFolder | None, cards_only: bool
) -> list[CardSet]:
    """The card sets to compare: the distilled cards, a folder's cards, or both side by side."""
    if cards_dir is None or read is None:
        return [distilled_set(corpus)]
    folder = folder_set(corpus, cards_dir, read)
    return [folder] if cards_only else [distilled_set(corpus), folder]


def run_evaluation(
    settings: Settings,
    transcripts: Sequence[str | Path],
    queries: Path | str | Sequence[EvalQuery],
    systems: Sequence[str] | None = None,
    k: int = 3,
    *,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    distiller: Distiller | None = None,
    cards_dir: Path | str | None = None,
    cards_only: bool = False,
    negatives: Path | str | Sequence[Negative] | None = None,
) -> EvalResult:
    """Rank every corpus session for every query with every selected system; score the ranks.

    With `cards_dir`, card systems run on that folder's cards (validated; missing sessions distilled) and,
    unless `cards_only`, also on the distilled cards, side by side (`hybrid@heuristic`, `hybrid@cards`).
    With `negatives`, each card set also gets the injection view (`evaluation.injection`): what the prompt
    hook gives the agent for the positives and for prompts no session covers.
    """
    if k < 1:
        raise InvalidArgumentError(f"k must be at least 1, got {k}")
    check_folders(transcripts, cards_dir)
    progress = progress or Progress()
    chosen = select_systems(systems)
    query_list = read_queries(queries) if isinstance(queries, str | Path) else list(queries)
    if not query_list:
        raise InvalidArgumentError("no queries to evaluate")
    negative_list = read_negatives(negatives) if isinstance(negatives, str | Path) else list(negatives or [])
    seconds: dict[str, float] = {}
    # the second stage is waited for: its order is measured here, its latency by the benchmarks
    settings = settings.model_copy(update={"rerank_seconds": 0.0})

    started = time.perf_counter()
    from episodic.assembly import build_source

    cache = WorkCache(settings.cache_dir / "eval")
    corpus = load_corpus(settings, build_source(settings), [str(p) for p in transcripts], cache, progress)
    seconds["parse"] = time.perf_counter() - started
    if not corpus.trajectories:
        raise InvalidArgumentError(f"no sessions found under {', '.join(map(str, transcripts))}")

    read = read_folder(corpus, Path(cards_dir), settings) if cards_dir else None
    if any(cls.needs_cards for cls in chosen):
        from episodic.assembly import build_distiller

        distiller = distiller or build_distiller(settings)
        mark = time.perf_counter()
        # --cards-only: distil only what the folder lacks (with an LLM distiller, the rest costs money)
        only = set(corpus.trajectories) - set(read.cards) if read is not None and cards_only else None
        distill_corpus(corpus, settings, distiller, cache, progress, only=only)
        seconds["distill"] = time.perf_counter() - mark

    missing = [q.id for q in query_list if q.session_id not in corpus.trajectories]
    for q in query_list:
        if q.session_id not in corpus.trajectories:
            progress.note(
                f"warning: query {q.id}: target session {q.session_id} is not in the corpus (a miss)"
            )

    sets = _card_sets(corpus, Path(cards_dir) if cards_dir else None, read, cards_only)
    first_prompts = {sid: t.request for sid, t in corpus.trajectories.items()}
    readability = {c.label: check_cards(c.cards, first_prompts).as_dict() for c in sets}
    embedder = embedder or default_embedder(settings)
    ranks: dict[str, list[int | None]] = {}
    notes: dict[str, list[dict[str, Any]]] = {}
    results: dict[str, SystemResult] = {}
    injection: dict[str, InjectionView] = {}
    second_stages: dict[str, dict[str, Any]] = {}
    texts = [q.query for q in query_list]
    with tempfile.TemporaryDirectory(prefix="episodic-eval-") as workdir:
        for position, card_set in enumerate(sets):
            view = replace(
                corpus,
                cards=card_set.cards,
                distiller=card_set.distiller,
                card_distillers=card_set.distillers,
            )
            scratch = Path(workdir) / card_set.label
            scratch.mkdir()
            context = SystemContext(settings, embedder, distiller, scratch, progress, k=k)
            for cls in chosen:
                if not cls.needs_cards and position > 0:
                    continue  # raw baselines do not read cards: once is enough
                name = f"{cls.name}@{card_set.label}" if cls.needs_cards and len(sets) > 1 else cls.name
                mark = time.perf_counter()
                system = cls(context)
                system.build(view)
                progress.start(f"{name}: ranking", len(query_list))
                ranks[name], notes[name] = [], []
                for q, text in zip(query_list, texts, strict=True):
                    ranking = system.rank(text)
                    ranks[name].append(rank_of(q.session_id, ranking))
                    notes[name].append(system.query_notes(text, q.session_id))
                    progress.advance()
                results[name] = SystemResult(
                    name=name,
                    description=cls.description,
                    metrics=summarize(ranks[name], k),
                    card_set=card_set.label if cls.needs_cards else None,
                    notes=system.summary_notes(notes[name], ranks[name], k),
                    seconds=round(time.perf_counter() - mark, 2),
                )
            if negative_list:
                mark = time.perf_counter()
                progress.start(f"injection view @{card_set.label}", 1)
                memory = default_memory(context, view)
                production = replace(memory, settings=settings.model_copy(update={"max_k": max(k, 5)}))
                present = [q for q in query_list if q.session_id in corpus.trajectories]
                injection[card_set.label] = injection_view(production, card_set.label, present, negative_list)
                progress.advance()
                seconds[f"injection@{card_set.label}"] = time.perf_counter() - mark
            built = context.built("default-memory")
            if built is not None and isinstance(built.reranker, TimedReranker):
                second_stages[card_set.label] = built.reranker.summary()
    seconds["total"] = time.perf_counter() - started

    query_results = [
        QueryResult(
            id=q.id,
            query=q.query,
            session_id=q.session_id,
            difficulty=q.difficulty,
            fold=fold_of(q.session_id),
            in_corpus=q.session_id in corpus.trajectories,
            ranks={name: ranks[name][i] for name in ranks},
            notes={name: notes[name][i] for name in notes if notes[name][i]},
        )
        for i, q in enumerate(query_list)
    ]
    for name, result in results.items():
        result.by_difficulty = _by_group(query_results, name, k, "difficulty")
        result.by_fold = _by_group(query_results, name, k, "fold")
    return EvalResult(
        k=k,
        embedder=embedder.id,
        systems=results,
        queries=query_results,
        comparisons=compare_all({name: r.metrics for name, r in results.items()}),
        corpus={
            **corpus.summary(),
            "card_sets": {card_set.label: card_set.summary for card_set in sets},
            "cache_hits": cache.hits,
            "cache_misses": cache.misses,
        },
        missing_targets=missing,
        seconds={name: round(value, 2) for name, value in seconds.items()},
        injection=injection,
        readability=readability,
        second_stage=second_stages,
    )
