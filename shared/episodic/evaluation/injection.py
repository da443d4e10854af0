"""The injection view: what the prompt hook would actually give the agent, for positives and negatives.

Every figure comes from the hook's own path: the `search_traces` MCP tool called with the hook's arguments
(`hook_server.search_arguments`), the hook's selection of its results (`hook_server.select_hits`) and its text
(`hook.build_context`). Positives count the target injected as a full card, and as a card or a pointer;
negatives (problems no session covers, `dev-negatives.jsonl`) count anything injected and its characters.
The curves move one confidence bar at a time over the recorded hits (same labelling code) to show the
frontier between targets injected and negatives injected.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from episodic.core.confidence import ConfidenceRule
from episodic.evaluation.cardsets import fold_of
from episodic.evaluation.leave_one_out import ExcludingStore, standard_error
from episodic.evaluation.queries import EvalQuery
from episodic.hooks import prompt as hook
from episodic.hooks import server_client as hook_server
from episodic.kernel.auth import Principal
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import LOCAL_TENANT, SearchFilters, SearchHit

CURVE_STEPS = [round(1.0 + 0.25 * i, 2) for i in range(21)]  # 1.0 .. 6.0 in z units


class Negative(BaseModel):
    """One prompt no session covers: the right answer is silence."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    query: str = Field(min_length=1)
    id: str = ""
    kind: str | None = None


def read_negatives(path: Path | str) -> list[Negative]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InvalidArgumentError(f"negatives file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"cannot read negatives file {path}: {exc}") from exc
    out: list[Negative] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            negative = Negative(**obj) if isinstance(obj, dict) else None
        except (ValueError, TypeError) as exc:
            raise InvalidArgumentError(f"{path} line {number}: not a negative ({exc})") from exc
        if negative is None:
            raise InvalidArgumentError(f"{path} line {number}: expected a JSON object")
        out.append(negative if negative.id else negative.model_copy(update={"id": f"line{number}"}))
    if not out:
        raise InvalidArgumentError(f"negatives file {path} holds no prompts")
    return out


class InjectionFigures(BaseModel):
    """One group's figures (all, a fold) for one card set and one rule."""

    positives: int = 0
    negatives: int = 0
    target_as_card: float = 0.0  # share of positives whose target is injected as a full card
    target_surfaced: float = 0.0  # ... as a card or a pointer
    cards_per_positive: float = 0.0
    pointers_per_positive: float = 0.0
    cards_that_are_target: float | None = None  # of the full cards injected for positives (None: none)
    negatives_with_card: float = 0.0
    negatives_with_anything: float = 0.0
    cards_per_negative: float = 0.0
    pointers_per_negative: float = 0.0
    chars_per_negative: float = 0.0
    # binomial standard errors of the shares above
    target_as_card_se: float = 0.0
    negatives_with_card_se: float = 0.0
    negatives_with_anything_se: float = 0.0


class McpFigures(BaseModel):
    """What `search_traces` returns with its defaults, as an agent calls it (only `query` given)."""

    positives: int = 0
    negatives: int = 0
    target_returned: float = 0.0  # share of positives whose target is among the results (card or entry)
    target_first: float = 0.0  # ... is the first result
    target_as_card: float = 0.0  # ... is returned as a strong card
    results_per_positive: float = 0.0
    negatives_with_card: float = 0.0
    negatives_with_anything: float = 0.0
    no_match_said: float = 0.0  # share of negatives answered "No confident match" with nothing listed
    chars_per_negative: float = 0.0
    target_first_se: float = 0.0
    negatives_with_card_se: float = 0.0
    negatives_with_anything_se: float = 0.0


@dataclass(frozen=True)
class Asked:
    """What search_traces returned to an agent for one prompt."""

    fold: str
    target: str | None
    results: tuple[tuple[str, str], ...]  # (session id, confidence), best first
    chars: int


def summarize_mcp(rows: Sequence[Asked]) -> McpFigures:
    pos = [r for r in rows if r.target]
    neg = [r for r in rows if not r.target]
    n, m = max(len(pos), 1), max(len(neg), 1)
    ids = [[sid for sid, _ in r.results] for r in pos]
    first = sum(bool(i) and i[0] == r.target for r, i in zip(pos, ids, strict=True)) / n
    carded = sum(any(c == "strong" for _, c in r.results) for r in neg) / m
    anything = sum(bool(r.results) for r in neg) / m
    return McpFigures(
        positives=len(pos),
        negatives=len(neg),
        target_returned=round(sum(r.target in i for r, i in zip(pos, ids, strict=True)) / n, 4),
        target_first=round(first, 4),
        target_as_card=round(sum((r.target, "strong") in r.results for r in pos) / n, 4),
        results_per_positive=round(sum(len(r.results) for r in pos) / n, 3),
        negatives_with_card=round(carded, 4),
        negatives_with_anything=round(anything, 4),
        no_match_said=round(sum(not r.results for r in neg) / m, 4),
        chars_per_negative=round(sum(r.chars for r in neg) / m, 1),
        target_first_se=standard_error(first, len(pos)),
        negatives_with_card_se=standard_error(carded, len(neg)),
        negatives_with_anything_se=standard_error(anything, len(neg)),
    )


@dataclass(frozen=True)
class Injected:
    """What the hook injected for one prompt."""

    prompt_id: str
    fold: str
    target: str | None  # None: a negative
    cards: tuple[str, ...]
    pointers: tuple[str, ...]
    chars: int


def summarize(rows: Sequence[Injected]) -> InjectionFigures:
    pos = [r for r in rows if r.target]
    neg = [r for r in rows if not r.target]
    cards = sum(len(r.cards) for r in pos)
    right = sum(r.cards.count(r.target or "") for r in pos)
    n, m = max(len(pos), 1), max(len(neg), 1)
    as_card = sum(r.target in r.cards for r in pos) / n
    carded = sum(bool(r.cards) for r in neg) / m
    anything = sum(bool(r.cards or r.pointers) for r in neg) / m
    return InjectionFigures(
        positives=len(pos),
        negatives=len(neg),
        target_as_card=round(as_card, 4),
        target_as_card_se=standard_error(as_card, len(pos)),
        negatives_with_card_se=standard_error(carded, len(neg)),
        negatives_with_anything_se=standard_error(anything, len(neg)),
        target_surfaced=round(sum(r.target in r.cards + r.pointers for r in pos) / n, 4),
        cards_per_positive=round(cards / n, 3),
        pointers_per_positive=round(sum(len(r.pointers) for r in pos) / n, 3),
        cards_that_are_target=round(right / cards, 4) if cards else None,
        negatives_with_card=round(carded, 4),
        negatives_with_anything=round(anything, 4),
        cards_per_negative=round(sum(len(r.cards) for r in neg) / m, 3),
        pointers_per_negative=round(sum(len(r.pointers) for r in neg) / m, 3),
        chars_per_negative=round(sum(r.chars for r in neg) / m, 1),
    )


def injected_for(
    prompt_id: str, fold: str, target: str | None, results: list[Any], max_chars: int
) -> Injected:
    """The hook's selection and text over search_traces' structured results."""
    hits = hook_server.select_hits(results, approved_only=False)
    cards = tuple(str(h.get("session_id")) for h in hits if hook.is_strong(h))
    pointers = tuple(str(h.get("session_id")) for h in hits if not hook.is_strong(h))
    chars = len(hook.build_context(hits, max_chars)) if hits else 0
    return Injected(prompt_id, fold, target, cards, pointers, chars)


class InjectionView(BaseModel):
    """The injection figures of one card set: the configured rule, per fold, and the two curves."""

    card_set: str
    strong_score: float
    weak_score: float
    overall: InjectionFigures
    by_fold: dict[str, InjectionFigures]
    # each point: the bar moved, the rest as configured: {"bar", "target_as_card" | "target_surfaced", ...}
    card_curve: list[dict[str, float]]
    pointer_curve: list[dict[str, float]]
    prompts: list[dict[str, Any]] = Field(default_factory=list)
    # what an agent calling search_traces with its defaults receives (overall, then per fold)
    mcp: McpFigures = Field(default_factory=McpFigures)
    mcp_by_fold: dict[str, McpFigures] = Field(default_factory=dict)
    # leave-one-out: every positive asked with its target and cousins left out, read as a negative
    loo: InjectionFigures = Field(default_factory=InjectionFigures)
    loo_by_fold: dict[str, InjectionFigures] = Field(default_factory=dict)
    mcp_loo: McpFigures = Field(default_factory=McpFigures)
    mcp_loo_by_fold: dict[str, McpFigures] = Field(default_factory=dict)


def _prompts(
    positives: Sequence[EvalQuery], negatives: Sequence[Negative]
) -> list[tuple[str, str, str | None, str]]:
    rows: list[tuple[str, str, str | None, str]] = [
        (q.id, fold_of(q.session_id), q.session_id, q.query) for q in positives
    ]
    rows += [(n.id, fold_of(n.id), None, n.query) for n in negatives]
    return rows


def injection_view(
    memory: Any, label: str, positives: Sequence[EvalQuery], negatives: Sequence[Negative]
) -> InjectionView:
    """Ask every prompt as the hook does (the MCP tool, production settings) and score what it injects."""
    from episodic.core.search import confidence_rule, search_traces
    from episodic.mcp.tools import hit_json, read_tools

    tool = next(t for t in read_tools(memory) if t.name == "search_traces")
    principal = Principal(LOCAL_TENANT)
    max_chars = int(memory.settings.hook_max_chars)
    rows: list[Injected] = []
    asked: list[Asked] = []
    recorded: list[tuple[str, str, str | None, list[SearchHit]]] = []
    filters = SearchFilters(include_unverified=False)
    for prompt_id, fold, target, text in _prompts(positives, negatives):
        query = text[: hook.MAX_QUERY_CHARS]
        injected, one = ask(tool, principal, (prompt_id, fold, target, query), max_chars)
        rows.append(injected)
        asked.append(one)
        k = hook_server.search_arguments(query, approved_only=False)["k"]
        raw = search_traces(memory, LOCAL_TENANT, query, k=k, filters=filters)
        recorded.append((prompt_id, fold, target, raw))
    left_out = [leave_one_out(memory, q, max_chars) for q in positives]
    loo_rows = [row for row, _ in left_out]
    loo_asked = [one for _, one in left_out]
    rule = confidence_rule(memory)

    def curve(bar: str) -> list[dict[str, float]]:
        points = []
        for value in CURVE_STEPS:
            moved = replace(rule, **{bar: value})
            if moved.weak_score > moved.strong_score:
                moved = replace(moved, **{"weak_score" if bar == "strong_score" else "strong_score": value})
            figures = summarize(
                [
                    injected_for(pid, fold, target, [hit_json(h) for h in _shown(moved, raw)], max_chars)
                    for pid, fold, target, raw in recorded
                ]
            )
            points.append({"bar": value, **figures.model_dump(exclude_none=True)})
        return points

    folds = sorted({r.fold for r in rows})
    return InjectionView(
        loo=summarize(loo_rows),
        loo_by_fold={f: summarize([r for r in loo_rows if r.fold == f]) for f in folds},
        mcp_loo=summarize_mcp(loo_asked),
        mcp_loo_by_fold={f: summarize_mcp([a for a in loo_asked if a.fold == f]) for f in folds},
        mcp=summarize_mcp(asked),
        mcp_by_fold={f: summarize_mcp([a for a in asked if a.fold == f]) for f in folds},
        card_set=label,
        strong_score=rule.strong_score,
        weak_score=rule.weak_score,
        overall=summarize(rows),
        by_fold={f: summarize([r for r in rows if r.fold == f]) for f in folds},
        card_curve=curve("strong_score"),
        pointer_curve=curve("weak_score"),
        prompts=[
            {
                "id": r.prompt_id,
                "fold": r.fold,
                "target": r.target,
                "cards": list(r.cards),
                "pointers": list(r.pointers),
                "chars": r.chars,
                "hits": [[h.record.session_id, round(h.score, 4), round(h.similarity, 4)] for h in raw],
            }
            for r, (_, _, _, raw) in zip(rows, recorded, strict=True)
        ]
        + [
            {
                "id": r.prompt_id,
                "fold": r.fold,
                "left_out": True,
                "cards": list(r.cards),
                "pointers": list(r.pointers),
                "chars": r.chars,
                "search_traces": [sid for sid, _ in a.results],
            }
            for r, a in zip(loo_rows, loo_asked, strict=True)
        ],
    )


def leave_one_out(memory: Any, query: EvalQuery, max_chars: int) -> tuple[Injected, Asked]:
    """What the hook and `search_traces` (its defaults) give for a positive whose target and cousins were
    never stored: both read as a negative's answer (the target is None)."""
    from episodic.mcp.tools import read_tools

    without = replace(memory, store=ExcludingStore(memory.store, [query.session_id, *query.cousins]))
    tool = next(t for t in read_tools(without) if t.name == "search_traces")
    prompt = (f"{query.id}~loo", fold_of(query.session_id), None, query.query[: hook.MAX_QUERY_CHARS])
    return ask(tool, Principal(LOCAL_TENANT), prompt, max_chars)


def ask(
    tool: Any, principal: Principal, prompt: tuple[str, str, str | None, str], max_chars: int
) -> tuple[Injected, Asked]:
    """One prompt (id, fold, target, text) through the MCP tool twice: with the hook's arguments, scored as
    the hook injects it, and with the tool's defaults, as an agent that asks receives it."""
    prompt_id, fold, target, text = prompt
    arguments = hook_server.search_arguments(text, approved_only=False)
    results = (tool.handler(principal, arguments).structured or {}).get("results", [])
    injected = injected_for(prompt_id, fold, target, results, max_chars)
    default = tool.handler(principal, {"query": text})
    found = (default.structured or {}).get("results", [])
    pairs = tuple((str(h.get("session_id")), str(h.get("confidence"))) for h in found)
    return injected, Asked(fold, target, pairs, len(default.text) if found else 0)


def _shown(rule: ConfidenceRule, hits: list[SearchHit]) -> list[SearchHit]:
    from episodic.core.confidence import shown

    return shown(rule.label(hits), include_weak=True)
