"""Deep sleep: each candidate thread scored on six weighted signals, promoted only through three gates.

Signals (each in [0, 1]; the inputs of every one are kept for `--explain`):
- relevance 0.30: 0.6 x project centrality (sessions of the thread's main project this week / sessions
  of the week's busiest project) + 0.4 x open work (1 when a session of the thread did not end verified,
  or the thread matches an unfinished thread of an earlier record; else 0).
- frequency 0.24: sessions in the thread / FREQUENCY_SATURATION, capped at 1 (retries already removed).
- recency 0.15: how late in the week its latest session started (Monday 00:00 = 0, next Monday = 1).
- query diversity 0.15: distinct contexts (day, project, branch) it surfaced in, (k - 1) / (CONTEXTS - 1).
- conceptual richness 0.10: distinct card tags across its sessions / RICHNESS_SATURATION, capped at 1.
- novelty 0.06: 1 - the largest similarity with a theme of an earlier record (1 when none).
Gates: score >= SCORE_GATE, sessions >= SESSIONS_GATE, and no earlier theme with a similarity of
`WeekContext.equivalent` or more (nothing equivalent already recorded).
Similarity is by meaning when the cycle has an embedder (the cosine of the thread's card vector and the
earlier item's title vector; equivalent at the embedder's same-statement threshold, related at its
same-thread one, see `statements`), else the Jaccard overlap of terms (EQUIVALENT_OVERLAP, OPEN_WORK_OVERLAP).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from episodic.dream.threads import Thread
from episodic.dream.weeks import IsoWeek
from episodic.kernel.models import Outcome

WEIGHTS: dict[str, float] = {
    "relevance": 0.30,
    "frequency": 0.24,
    "recency": 0.15,
    "query_diversity": 0.15,
    "conceptual_richness": 0.10,
    "novelty": 0.06,
}
SCORE_GATE = 0.7
SESSIONS_GATE = 2
EQUIVALENT_OVERLAP = 0.6
OPEN_WORK_OVERLAP = 0.3
FREQUENCY_SATURATION = 4
CONTEXTS = 3
RICHNESS_SATURATION = 6


@dataclass(frozen=True)
class RecordedItem:
    """A theme or unfinished thread of an earlier record, by its week and its terms."""

    week: str
    text: str
    terms: frozenset[str]
    vector: Any = (
        None  # its title's embedding (a card's problem): compared by meaning when the thread has one
    )


@dataclass
class PriorMemory:
    weeks: list[str] = field(default_factory=list)  # the earlier records read (oldest first)
    themes: list[RecordedItem] = field(default_factory=list)
    unfinished: list[RecordedItem] = field(default_factory=list)


@dataclass
class WeekContext:
    week: IsoWeek
    project_sessions: Counter[str]
    prior: PriorMemory = field(default_factory=PriorMemory)
    equivalent: float = EQUIVALENT_OVERLAP  # with vectors: the embedder's same-statement cosine
    related: float = OPEN_WORK_OVERLAP  # with vectors: the embedder's same-thread cosine


@dataclass
class Signal:
    name: str
    value: float
    inputs: dict[str, Any]

    @property
    def weight(self) -> float:
        return WEIGHTS[self.name]


@dataclass
class Gate:
    name: str
    passed: bool
    detail: str


@dataclass
class Scored:
    thread: Thread
    signals: list[Signal]
    gates: list[Gate]

    @property
    def score(self) -> float:
        return round(sum(s.weight * s.value for s in self.signals), 3)

    @property
    def promoted(self) -> bool:
        return all(g.passed for g in self.gates)


def overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _closest(thread: Thread, items: list[RecordedItem]) -> tuple[float, RecordedItem | None]:
    """The earlier item nearest the thread: by the cosine of their vectors when both have one (meaning),
    else by the Jaccard overlap of their terms."""
    terms = frozenset(thread.terms)
    best: tuple[float, RecordedItem | None] = (0.0, None)
    for item in items:
        if thread.vector is not None and item.vector is not None:
            value = max(0.0, float(thread.vector @ item.vector))
        else:
            value = overlap(terms, item.terms)
        if value > best[0]:
            best = (value, item)
    return best


def relevance(thread: Thread, ctx: WeekContext) -> Signal:
    project, count = thread.projects.most_common(1)[0]
    busiest = max(ctx.project_sessions.values(), default=0) or 1
    centrality = min(1.0, ctx.project_sessions.get(project, count) / busiest)
    not_verified = [d.session_id for d in thread.sessions if d.record.card.outcome is not Outcome.VERIFIED]
    carried, item = _closest(thread, ctx.prior.unfinished)
    open_work = 1.0 if not_verified or carried >= ctx.related else 0.0
    return Signal(
        "relevance",
        round(0.6 * centrality + 0.4 * open_work, 3),
        {
            "project": project,
            "project_sessions": ctx.project_sessions.get(project, count),
            "busiest_project_sessions": busiest,
            "centrality": round(centrality, 3),
            "sessions_not_verified": len(not_verified),
            "earlier_unfinished_overlap": round(carried, 3),
            "earlier_unfinished": f"{item.week}: {item.text[:80]}" if item and carried else None,
            "open_work": open_work,
        },
    )


def frequency(thread: Thread) -> Signal:
    n = len(thread.sessions)
    return Signal(
        "frequency",
        round(min(1.0, n / FREQUENCY_SATURATION), 3),
        {"sessions": n, "saturation": FREQUENCY_SATURATION},
    )


def recency(thread: Thread, ctx: WeekContext) -> Signal:
    starts = [d.started_at for d in thread.sessions if d.started_at]
    latest = max(starts) if starts else ctx.week.since
    fraction = (latest - ctx.week.since).total_seconds() / (7 * 86400)
    return Signal(
        "recency",
        round(min(1.0, max(0.0, fraction)), 3),
        {
            "latest_session": latest.isoformat(timespec="minutes"),
            "week_start": ctx.week.since.date().isoformat(),
        },
    )


def query_diversity(thread: Thread) -> Signal:
    contexts = sorted(
        {
            (
                d.started_at.date().isoformat() if d.started_at else "undated",
                d.record.project or "?",
                d.record.git_branch or "-",
            )
            for d in thread.sessions
        }
    )
    value = min(1.0, (len(contexts) - 1) / (CONTEXTS - 1))
    return Signal(
        "query_diversity",
        round(value, 3),
        {"contexts": len(contexts), "saturation": CONTEXTS, "distinct": [" ".join(c) for c in contexts][:6]},
    )


def conceptual_richness(thread: Thread) -> Signal:
    tags = sorted({t.lower() for d in thread.sessions for t in d.record.card.tags})
    return Signal(
        "conceptual_richness",
        round(min(1.0, len(tags) / RICHNESS_SATURATION), 3),
        {"distinct_tags": len(tags), "tags": tags[:12], "saturation": RICHNESS_SATURATION},
    )


def novelty(thread: Thread, ctx: WeekContext) -> tuple[Signal, float, RecordedItem | None]:
    closest, item = _closest(thread, ctx.prior.themes)
    signal = Signal(
        "novelty",
        round(1.0 - closest, 3),
        {
            "closest_earlier_theme": f"{item.week}: {item.text[:80]}" if item else None,
            "overlap": round(closest, 3),
            "terms": thread.terms,
        },
    )
    return signal, closest, item


def score_thread(thread: Thread, ctx: WeekContext) -> Scored:
    novel, closest, item = novelty(thread, ctx)
    signals = [
        relevance(thread, ctx),
        frequency(thread),
        recency(thread, ctx),
        query_diversity(thread),
        conceptual_richness(thread),
        novel,
    ]
    scored = Scored(thread=thread, signals=signals, gates=[])
    n = len(thread.sessions)
    scored.gates = [
        Gate(
            "score",
            scored.score >= SCORE_GATE,
            f"{scored.score:.3f} {'>=' if scored.score >= SCORE_GATE else '<'} {SCORE_GATE}",
        ),
        Gate("sessions", n >= SESSIONS_GATE, f"{n} session(s), {SESSIONS_GATE} needed"),
        Gate(
            "not_recorded",
            closest < ctx.equivalent,
            f"closest earlier theme overlap {closest:.2f}"
            + (f" ({item.week})" if item else "")
            + f", equivalent at {ctx.equivalent}",
        ),
    ]
    return scored


def explain(scored: list[Scored]) -> str:
    """Every candidate's signals with their inputs, its score and its gates (the `--explain` text)."""
    out: list[str] = []
    for item in scored:
        verdict = "PROMOTED" if item.promoted else "held back"
        out.append(f"thread {item.thread.number} · {verdict} · score {item.score:.3f} · {item.thread.label}")
        for signal in item.signals:
            inputs = ", ".join(f"{k}={v}" for k, v in signal.inputs.items() if v is not None)
            out.append(
                f"  {signal.name:<20} {signal.value:.3f} x {signal.weight:.2f} = "
                f"{signal.value * signal.weight:.3f}  ({inputs})"
            )
        for gate in item.gates:
            out.append(f"  gate {gate.name:<13} {'pass' if gate.passed else 'FAIL'}  {gate.detail}")
    return "\n".join(out)
