"""The replay of real prompts: each session's own prompts, in time order, against the memory as it stood.

Sessions are taken in order of their start; before a session's prompts are asked, every session that ended
before it started is stored (in order of its end), so a session never meets itself or a later one and the
memory grows as a user's does (its z-scores, keyword statistics and small-pool rule are those of that moment).
Each prompt the hook would answer (`hooks.payload.prompt_of`: no slash commands, no short prompts) is asked as
the hook asks (the MCP tool `search_traces` with the hook's arguments and its receiving session, so the
server's own decision applies: never the same card twice in a session, the steering rules by their switches;
then `plumbing.hook_choice.select_hits`, the hook's text), once with the first stage alone and once with the
configured second stage. The per-prompt records keep
the tool's results, so other code can re-select from them (`replay_card_set`'s `select`).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from episodic.evaluation.cardsets import CardSet, fold_of
from episodic.evaluation.progress import Progress
from episodic.evaluation.replay_setup import FIRST_STAGE, SHIPPED, ReplayCorpus
from episodic.hooks import packing as hook
from episodic.hooks import server_client as hook_server
from episodic.hooks.payload import MAX_QUERY_CHARS, HookSkip, prompt_of
from episodic.kernel.auth import Principal
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import LOCAL_TENANT, Trajectory

TOP_CARDS = 10
# results an agent's hook may choose from, and the session's cards given before this prompt (any tier)
Selector = Callable[[list[dict[str, Any]], Sequence[str]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Given:
    """One card the hook gave for a prompt: in full (`card`) or as a one-line pointer (`pointer`)."""

    session_id: str
    tier: str
    score: float
    similarity: float


@dataclass(frozen=True)
class ReplayedPrompt:
    """What the hook gave for one real prompt of one session, asked before that session started."""

    session_id: str  # the session the prompt belongs to
    index: int  # its position among the session's prompts (Trajectory.prompts; 0: the first)
    fold: str  # the receiving session's fold (cardsets.fold_of)
    memory_size: int  # cards in the memory when it was asked
    given: tuple[Given, ...]
    chars: int  # characters injected (0: nothing)
    results: tuple[dict[str, Any], ...] = ()  # search_traces' results the hook chose from, best first

    @property
    def cards(self) -> tuple[str, ...]:
        return tuple(g.session_id for g in self.given if g.tier == "card")

    @property
    def pointers(self) -> tuple[str, ...]:
        return tuple(g.session_id for g in self.given if g.tier == "pointer")

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "index": self.index,
            "fold": self.fold,
            "memory_size": self.memory_size,
            "chars": self.chars,
            "given": [[g.session_id, g.tier, round(g.score, 4), round(g.similarity, 4)] for g in self.given],
        }


@dataclass
class Timeline:
    """The sessions in order of start; the prompts the hook answers and why it skips the others."""

    order: list[Trajectory]
    untimed: list[str] = field(default_factory=list)  # sessions without a start or an end time
    skipped: Counter[str] = field(default_factory=Counter)  # the hook's reason -> prompts

    def answered(self, trajectory: Trajectory) -> list[tuple[int, str]]:
        """(index, the text the hook asks) for each prompt of the session the hook would answer."""
        out = []
        for index, text in enumerate(trajectory.prompts):
            try:
                out.append((index, prompt_of({"prompt": text})[:MAX_QUERY_CHARS]))
            except HookSkip as skip:
                self.skipped[str(skip).removeprefix("skip: ")] += 1
        return out


def timeline(trajectories: Mapping[str, Trajectory]) -> Timeline:
    timed = [t for t in trajectories.values() if t.started_at is not None and t.ended_at is not None]
    untimed = sorted(s for s, t in trajectories.items() if t.started_at is None or t.ended_at is None)
    return Timeline(sorted(timed, key=lambda t: (t.started_at, t.session_id)), untimed)


def spread(order: Sequence[Trajectory], limit: int | None) -> set[str]:
    """The sessions to replay: all, or `limit` of them spread evenly over the timeline."""
    if limit is None or limit >= len(order):
        return {t.session_id for t in order}
    if limit < 1:
        raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
    return {order[(i * len(order)) // limit].session_id for i in range(limit)}


def default_selector(approved_only: bool) -> Selector:
    """The hook's own choice among the results (it remembers nothing of the session's earlier prompts)."""
    return lambda results, _given_before: hook_server.select_hits(results, approved_only)


def receiving_session(stage: str, session_id: str) -> str:
    """The session the server records a stage's answers for: stages share one store, never one record."""
    return f"{stage}/{session_id}"


def replay_card_set(
    memory: Any,
    card_set: CardSet,
    trajectories: Timeline,
    stages: Mapping[str, Any],
    *,
    only: set[str] | None = None,
    select: Selector | None = None,
    progress: Progress | None = None,
) -> dict[str, list[ReplayedPrompt]]:
    """Walk the timeline on an empty `memory`, storing each session once it has ended, and ask every answered
    prompt of the sessions in `only` (default: all) of each stage (name -> a Memory sharing that store)."""
    from episodic.cards.write import store_card
    from episodic.mcp.tools import read_tools

    settings = memory.settings
    select = select or default_selector(bool(settings.review_required))
    tools = {name: next(t for t in read_tools(m) if t.name == "search_traces") for name, m in stages.items()}
    principal = Principal(LOCAL_TENANT)
    max_chars = int(settings.hook_max_chars)
    memory.store.ensure_manifest(memory.manifest)
    pending: list[tuple[Any, str]] = [
        (t.ended_at, t.session_id) for t in trajectories.order if t.session_id in card_set.cards
    ]
    heapq.heapify(pending)
    by_id = {t.session_id: t for t in trajectories.order}
    wanted = [t for t in trajectories.order if only is None or t.session_id in only]
    asked = {t.session_id: trajectories.answered(t) for t in wanted}
    out: dict[str, list[ReplayedPrompt]] = {name: [] for name in stages}
    stored = 0
    progress = progress or Progress()
    progress.start(f"replay @{card_set.label}", sum(map(len, asked.values())))
    for trajectory in wanted:
        while pending and pending[0][0] < trajectory.started_at:
            _, session_id = heapq.heappop(pending)
            store_card(
                memory,
                LOCAL_TENANT,
                card_set.cards[session_id],
                session_id=session_id,
                distiller=card_set.distillers.get(session_id, card_set.distiller),
                trajectory=by_id[session_id],
            )
            stored += 1
        before: dict[str, list[str]] = {name: [] for name in stages}
        for index, query in asked[trajectory.session_id]:
            for name, tool in tools.items():
                # the server decides what the session is given (never the same card twice, the steering
                # rules); each stage keeps its own record of what it gave, on the shared store
                receiving = (receiving_session(name, trajectory.session_id), trajectory.agent)
                arguments = hook_server.search_arguments(
                    query, approved_only=bool(settings.review_required), receiving=receiving
                )
                results = (tool.handler(principal, arguments).structured or {}).get("results", [])
                hits = select(results, tuple(before[name]))
                given = tuple(
                    Given(
                        str(h.get("session_id")),
                        "card" if hook.is_strong(h) else "pointer",
                        float(h.get("score") or 0.0),
                        float(h.get("similarity") or 0.0),
                    )
                    for h in hits
                )
                before[name] += [g.session_id for g in given]
                chars = len(hook.build_context(hits, max_chars)) if hits else 0
                fold = fold_of(trajectory.session_id)
                out[name].append(
                    ReplayedPrompt(trajectory.session_id, index, fold, stored, given, chars, tuple(results))
                )
            progress.advance()
    return out


class CardCount(BaseModel):
    """How often one card was given over the replayed prompts."""

    session_id: str
    prompts: int  # prompts given it, as a card or a pointer
    as_card: int  # ... as a full card
    share: float  # prompts / replayed prompts
    card_share: float  # as_card / replayed prompts


class ReplayFigures(BaseModel):
    """What the hook gave per real prompt, over one group of replayed prompts (± one standard error)."""

    prompts: int = 0
    sessions: int = 0
    cards_per_prompt: float = 0.0
    se_cards_per_prompt: float = 0.0
    prompts_with_card: float = 0.0
    se_prompts_with_card: float = 0.0
    pointers_per_prompt: float = 0.0
    se_pointers_per_prompt: float = 0.0
    prompts_with_anything: float = 0.0
    se_prompts_with_anything: float = 0.0
    chars_per_prompt: float = 0.0
    # (session, card) pairs given two or more times in that session: as full cards; as anything
    card_repeats: int = 0
    repeats: int = 0
    max_share: float = 0.0  # the share of prompts given the most-given card (anything)
    max_card_share: float = 0.0  # ... as a full card
    cards_over_one_percent: int = 0  # cards given (anything) on more than 1 % of the prompts
    top: list[CardCount] = Field(default_factory=list)


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def summarize_replay(rows: Sequence[ReplayedPrompt]) -> ReplayFigures:
    n = len(rows)
    if n == 0:
        return ReplayFigures()
    cards, se_cards = _mean_se([len(r.cards) for r in rows])
    with_card, se_with_card = _mean_se([float(bool(r.cards)) for r in rows])
    pointers, se_pointers = _mean_se([len(r.pointers) for r in rows])
    anything, se_anything = _mean_se([float(bool(r.given)) for r in rows])
    per_session_card = Counter((r.session_id, c) for r in rows for c in r.cards)
    per_session_any = Counter((r.session_id, g.session_id) for r in rows for g in r.given)
    given = Counter(g.session_id for r in rows for g in r.given)
    as_card = Counter(c for r in rows for c in r.cards)
    top = [
        CardCount(
            session_id=s,
            prompts=count,
            as_card=as_card[s],
            share=round(count / n, 4),
            card_share=round(as_card[s] / n, 4),
        )
        for s, count in sorted(given.items(), key=lambda item: (-item[1], -as_card[item[0]], item[0]))
    ]
    return ReplayFigures(
        prompts=n,
        sessions=len({r.session_id for r in rows}),
        cards_per_prompt=round(cards, 4),
        se_cards_per_prompt=round(se_cards, 4),
        prompts_with_card=round(with_card, 4),
        se_prompts_with_card=round(se_with_card, 4),
        pointers_per_prompt=round(pointers, 4),
        se_pointers_per_prompt=round(se_pointers, 4),
        prompts_with_anything=round(anything, 4),
        se_prompts_with_anything=round(se_anything, 4),
        chars_per_prompt=round(sum(r.chars for r in rows) / n, 1),
        card_repeats=sum(1 for count in per_session_card.values() if count > 1),
        repeats=sum(1 for count in per_session_any.values() if count > 1),
        max_share=max((c.share for c in top), default=0.0),
        max_card_share=round(max(as_card.values(), default=0) / n, 4),
        cards_over_one_percent=sum(1 for c in top if c.share > 0.01),
        top=top[:TOP_CARDS],
    )


class ReplayRun(BaseModel):
    """One card set, one stage: the figures over all replayed prompts and per fold."""

    card_set: str
    stage: str
    reranker: str
    overall: ReplayFigures
    by_fold: dict[str, ReplayFigures] = Field(default_factory=dict)


class ReplayResult(BaseModel):
    """A replay: the runs side by side, the corpus' counts, and the per-prompt records of each run."""

    command: str = ""
    sessions: int = 0
    sessions_replayed: int = 0
    untimed_sessions: list[str] = Field(default_factory=list)
    prompts: int = 0  # every real prompt of the replayed sessions
    prompts_answered: int = 0  # ... the hook would answer
    skipped: dict[str, int] = Field(default_factory=dict)  # the hook's reason -> prompts
    runs: list[ReplayRun] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)
    records: dict[str, list[ReplayedPrompt]] = Field(default_factory=dict, exclude=True)  # run key -> rows

    def run(self, card_set: str, stage: str) -> ReplayRun | None:
        return next((r for r in self.runs if r.card_set == card_set and r.stage == stage), None)

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump()
        data["records"] = {key: [r.as_json() for r in rows] for key, rows in self.records.items()}
        return data


def run_key(card_set: str, stage: str) -> str:
    return f"{card_set}/{stage}"


def figures_of(card_set: str, stage: str, reranker: str, rows: Sequence[ReplayedPrompt]) -> ReplayRun:
    folds = sorted({r.fold for r in rows})
    return ReplayRun(
        card_set=card_set,
        stage=stage,
        reranker=reranker,
        overall=summarize_replay(rows),
        by_fold={f: summarize_replay([r for r in rows if r.fold == f]) for f in folds},
    )


def run_replay(
    settings: Any,
    transcripts: Sequence[str | Path],
    *,
    cards_dir: Path | str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    select: Selector | None = None,
    embedder: Any = None,
    distiller: Any = None,
) -> ReplayResult:
    """Parse and distil the corpus as `episodic eval` does, then replay it on each card set (the configured
    distiller's cards; with `cards_dir`, that folder's too), the first stage beside the configured one."""
    started = time.perf_counter()
    progress = progress or Progress()
    loaded = ReplayCorpus.load(settings, transcripts, cards_dir, progress, embedder, distiller)
    line = timeline(loaded.corpus.trajectories)
    only = spread(line.order, limit)
    result = ReplayResult(
        sessions=len(loaded.corpus.trajectories),
        sessions_replayed=len(only),
        untimed_sessions=line.untimed,
        seconds={"prepare": round(time.perf_counter() - started, 2)},
    )
    for card_set in loaded.card_sets:
        mark = time.perf_counter()
        line.skipped.clear()
        memory, stages = loaded.memories(card_set)
        rows = replay_card_set(
            memory,
            card_set,
            line,
            stages,
            only=only,
            select=select,
            progress=progress,
        )
        rows.setdefault(SHIPPED, rows[FIRST_STAGE])  # no second stage configured: what ships is the first
        for stage, stage_rows in rows.items():
            reranker = getattr(stages.get(stage), "reranker", None)
            reranker = "none" if reranker is None else reranker.name
            result.runs.append(figures_of(card_set.label, stage, reranker, stage_rows))
            result.records[run_key(card_set.label, stage)] = stage_rows
        result.seconds[f"replay@{card_set.label}"] = round(time.perf_counter() - mark, 2)
    result.skipped = dict(line.skipped)
    result.prompts_answered = len(next(iter(result.records.values()), []))
    result.prompts = result.prompts_answered + sum(result.skipped.values())
    result.seconds["total"] = round(time.perf_counter() - started, 2)
    loaded.close()
    return result
