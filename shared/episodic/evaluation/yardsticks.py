"""Every yardstick side by side: dev, fresh, pseudo-queries, leave-one-out, hand negatives and the replay of
real prompts, for each card set, the first stage beside what ships, per fold with standard errors.

Each yardstick is read by the code that defines it (`runner.run_evaluation` with its injection view and
leave-one-out view, `pseudo_queries`, `replay`); this module only runs them with the second stage off and
as configured, and lays the figures out as rows (yardstick, measure) by columns (card set, stage).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from episodic.evaluation.injection import InjectionFigures
from episodic.evaluation.leave_one_out import standard_error
from episodic.evaluation.progress import Progress
from episodic.evaluation.replay import ReplayFigures, ReplayResult, run_replay
from episodic.evaluation.replay_setup import FIRST_STAGE, SHIPPED
from episodic.evaluation.runner import EvalResult, run_evaluation
from episodic.kernel.errors import InvalidArgumentError

STAGES = (FIRST_STAGE, SHIPPED)
SYSTEM = "hybrid"  # search_traces' ranking (all outcomes): recall@1 is read on it
# the query sets an eval folder holds (`../shared/eval/README.md`): name -> (queries file, negatives file)
SETS = {
    "dev": ("dev-queries.jsonl", "dev-negatives.jsonl"),
    "fresh": ("fresh-queries.jsonl", "fresh-negatives.jsonl"),
}


class Cell(BaseModel):
    """One figure: its value, its standard error (None: a count), its n, and the same per fold."""

    value: float
    se: float | None = None
    n: int = 0
    folds: dict[str, Cell] = Field(default_factory=dict)


class Row(BaseModel):
    yardstick: str
    measure: str
    better: str  # "higher" | "lower" | "" (reported, no direction)
    counts: bool = False  # the cells are counts, not shares or means
    cells: dict[str, Cell] = Field(default_factory=dict)  # column ("card set, stage") -> figure


class YardsticksResult(BaseModel):
    command: str = ""
    columns: list[str] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)
    replay: ReplayResult | None = None

    def row(self, yardstick: str, measure: str) -> Row:
        found = next((r for r in self.rows if r.yardstick == yardstick and r.measure == measure), None)
        if found is None:
            found = Row(
                yardstick=yardstick, measure=measure, better=BETTER.get(measure, ""), counts=measure in COUNTS
            )
            self.rows.append(found)
        return found

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"replay"})
        if self.replay is not None:
            data["replay"] = self.replay.model_dump()
        return data


RECALL = "recall@1"
TARGET_CARD = "targets given as a full card (hook)"
HAND_CARD = "hand negatives given a full card"
LOO_CARD = "leave-one-out negatives given a full card"
REPLAY_MEASURES: dict[str, tuple[str, str | None, str]] = {  # measure -> (figure, its SE, better)
    "full cards per real prompt": ("cards_per_prompt", "se_cards_per_prompt", "lower"),
    "pointers per real prompt": ("pointers_per_prompt", "se_pointers_per_prompt", ""),
    "real prompts given anything": ("prompts_with_anything", "se_prompts_with_anything", ""),
    "the same card twice in a session (pairs, any tier)": ("repeats", None, "lower"),
    "the same full card twice in a session (pairs)": ("card_repeats", None, "lower"),
    "the most-given card's share of prompts": ("max_share", None, "lower"),
}
COUNTS = {m for m, (figure, _, _) in REPLAY_MEASURES.items() if figure.endswith("repeats")}
BETTER = {
    RECALL: "higher",
    TARGET_CARD: "higher",
    HAND_CARD: "lower",
    LOO_CARD: "lower",
    **{m: b for m, (_, _, b) in REPLAY_MEASURES.items()},
}


def column(card_set: str, stage: str) -> str:
    return f"{card_set}, {stage}"


def _share(figures: InjectionFigures, by_fold: dict[str, InjectionFigures], value: str, n: str) -> Cell:
    def one(f: InjectionFigures) -> Cell:
        share, count = float(getattr(f, value)), int(getattr(f, n))
        return Cell(value=share, se=standard_error(share, count), n=count)

    return one(figures).model_copy(update={"folds": {fold: one(f) for fold, f in by_fold.items()}})


def add_eval(result: YardsticksResult, yardstick: str, stage: str, run: EvalResult) -> None:
    """recall@1 of the default ranking, and the hook's view (targets, hand negatives, leave-one-out)."""
    for name, system in run.systems.items():
        base, _, card_set = name.partition("@")
        if base != SYSTEM:
            continue
        card_set = card_set or system.card_set or ""
        m = system.metrics
        folds = {f: Cell(value=x.recall_at_1, se=x.se_recall_at_1, n=x.n) for f, x in system.by_fold.items()}
        cell = Cell(value=m.recall_at_1, se=m.se_recall_at_1, n=m.n, folds=folds)
        result.row(yardstick, RECALL).cells[column(card_set, stage)] = cell
    for card_set, view in run.injection.items():
        key = column(card_set, stage)
        result.row(yardstick, TARGET_CARD).cells[key] = _share(
            view.overall, view.by_fold, "target_as_card", "positives"
        )
        result.row(yardstick, HAND_CARD).cells[key] = _share(
            view.overall, view.by_fold, "negatives_with_card", "negatives"
        )
        if view.loo.negatives:
            result.row(yardstick, LOO_CARD).cells[key] = _share(
                view.loo, view.loo_by_fold, "negatives_with_card", "negatives"
            )


def add_replay(result: YardsticksResult, replay: ReplayResult) -> None:
    for run in replay.runs:
        key = column(run.card_set, run.stage)
        for measure, (value, se, _) in REPLAY_MEASURES.items():

            def one(f: ReplayFigures, value: str = value, se: str | None = se) -> Cell:
                return Cell(
                    value=float(getattr(f, value)),
                    se=None if se is None else float(getattr(f, se)),
                    n=f.prompts,
                )

            cell = one(run.overall).model_copy(update={"folds": {k: one(f) for k, f in run.by_fold.items()}})
            result.row("replay", measure).cells[key] = cell


def _stage_settings(settings: Any, stage: str) -> Any:
    return settings.model_copy(update={"reranker": "none"}) if stage == FIRST_STAGE else settings


def run_yardsticks(
    settings: Any,
    transcripts: Sequence[str | Path],
    eval_dir: Path | str,
    *,
    cards_dir: Path | str | None = None,
    replay_limit: int | None = None,
    progress: Progress | None = None,
) -> YardsticksResult:
    """Run every yardstick the eval folder and the corpus allow, each stage, into one table."""
    from episodic.evaluation.pseudo_queries import PseudoRules, run_pseudo_queries

    eval_dir = Path(eval_dir)
    if not eval_dir.is_dir():
        raise InvalidArgumentError(f"eval folder not found: {eval_dir}")
    progress = progress or Progress()
    result = YardsticksResult()
    started = time.perf_counter()
    common: dict[str, Any] = {"systems": [SYSTEM], "progress": progress, "cards_dir": cards_dir}
    sets = {name: (eval_dir / q, eval_dir / n) for name, (q, n) in SETS.items() if (eval_dir / q).is_file()}
    for name, (q, _) in SETS.items():
        if name not in sets:
            result.notes.append(f"{name}: no {q} in {eval_dir}, left out")
    pseudo, _ = run_pseudo_queries(settings, [str(p) for p in transcripts], PseudoRules(), progress)
    for stage in STAGES:
        staged = _stage_settings(settings, stage)
        for name, (queries, negatives) in sets.items():
            mark = time.perf_counter()
            found = negatives if negatives.is_file() else None
            add_eval(
                result, name, stage, run_evaluation(staged, transcripts, queries, negatives=found, **common)
            )
            result.seconds[f"{name}, {stage}"] = round(time.perf_counter() - mark, 1)
        if pseudo:
            mark = time.perf_counter()
            add_eval(result, "pseudo-queries", stage, run_evaluation(staged, transcripts, pseudo, **common))
            result.seconds[f"pseudo-queries, {stage}"] = round(time.perf_counter() - mark, 1)
    mark = time.perf_counter()
    result.replay = run_replay(
        settings, transcripts, cards_dir=cards_dir, limit=replay_limit, progress=progress
    )
    add_replay(result, result.replay)
    result.seconds["replay"] = round(time.perf_counter() - mark, 1)
    result.seconds["total"] = round(time.perf_counter() - started, 1)
    labels = list(dict.fromkeys(k.split(", ")[0] for r in result.rows for k in r.cells))
    result.columns = [column(label, stage) for label in labels for stage in STAGES]
    return result
