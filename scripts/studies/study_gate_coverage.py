"""Study: how much of the prompt's specific content the card covers, as a full-card gate signal.

BM25 (the gate's `keyword` signal) measures how much a card matches; a neighbour that shares the prompt's rare
words matches too. Coverage asks the other way round: the IDF-weighted share of the prompt's distinct terms
(the keyword half's tokens, IDF over the tenant's own cards) that occur in the card, the share of the prompt's
three rarest indexed terms it holds, and the coverage's margin over the best other candidate's (a target covers
the prompt better than its neighbours; with the target left out, a neighbour's margin shrinks).

Per card kind: LLM cards add them to the shipped four signals (judge weight 1.0, depth 3); offline cards, which
have no gate today, get a gate over them with the fused score and its margin (and, when the cache was collected
with the judge, the judge's logit on their opening words, as a gate signal only: it does not reorder). Every
gate is fitted on dev alone (dev positives against dev leave-one-out and hand negatives), its bar and the
variant chosen on dev, and dev's choice read on the fresh set once: for LLM cards by the shipped gate's rule
(`choose`); for offline cards that rule already costs dev's targets past a standard error, so there the rule
is `keep_targets`. Every variant's fresh figures are printed for the record; only dev's choice decides.

    EPISODIC_RERANKER=none python scripts/studies/study_gate.py ../shared/transcripts ../shared/eval \
        --only cards --cache /tmp/gate-cards.pkl
    EPISODIC_RERANKER=none python scripts/studies/study_gate.py ../shared/transcripts ../shared/eval \
        --only heuristic --cache /tmp/gate-offline.pkl
    python scripts/studies/study_gate_coverage.py --cards /tmp/gate-cards.pkl --offline /tmp/gate-offline.pkl
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
from itertools import product
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import study_gate
import study_offline_gate

WEIGHT, DEPTH = 1.0, 3
RAREST = 3
HOOK_HITS = 3  # plumbing.hook_choice.MAX_CARDS
LOGIT_LIMIT = 12.0  # an unjudged candidate reads as a sure "no"
BARS = (0.4, 0.5, 0.55, 0.6, 0.65, 0.7)
DEV_CAP = (
    0.04  # the shipped gate's rule: the most dev targets with at most this share of dev negatives carded
)


def idf(df: int, cards: int) -> float:
    """BM25's non-negative IDF; a term no card holds weighs most."""
    return math.log(1.0 + (cards - df + 0.5) / (df + 0.5))


def annotate(rows: list[dict[str, Any]]) -> None:
    """Each candidate's coverage of its prompt: `cov` over the indexed terms, `cov_all` over every term, `rare`
    the share of the prompt's RAREST rarest indexed terms it holds."""
    for r in rows:
        known = [t for t in r["terms"] if r["df"].get(t, 0) > 0]
        weights = {t: idf(r["df"].get(t, 0), r["cards"]) for t in r["terms"]}
        total_known = sum(weights[t] for t in known) or 1.0
        total_all = sum(weights.values()) or 1.0
        rarest = sorted(known, key=lambda t: (r["df"][t], known.index(t)))[:RAREST]
        for pool in ("all", "verified"):
            for h in r[pool]:
                present = set(h["present"])
                h["cov"] = sum(weights[t] for t in known if t in present) / total_known
                h["cov_all"] = sum(weights[t] for t in r["terms"] if t in present) / total_all
                h["rare"] = sum(t in present for t in rarest) / len(rarest) if rarest else 0.0


def margin_of(top: list[dict[str, Any]], i: int, key: str) -> float:
    others = [x[key] for j, x in enumerate(top) if j != i]
    return top[i][key] - max(others) if others else 0.0


# ------------------------------------------------------------------------------------------- LLM cards

LLM_FEATURES = (*study_gate.GATE_FEATURES, "cov", "cov_margin", "rare", "cov_all")


def llm_features(top: list[dict[str, Any]], i: int) -> list[float]:
    h = top[i]
    return [*shipped_llm(top, i), h["cov"], margin_of(top[:HOOK_HITS], i, "cov"), h["rare"], h["cov_all"]]


shipped_llm = study_gate.gate_features
LLM_VARIANTS = {
    "the four signals (shipped)": [0, 1, 2, 4],
    "+ coverage": [0, 1, 2, 4, 5],
    "+ coverage margin": [0, 1, 2, 4, 6],
    "+ coverage + its margin": [0, 1, 2, 4, 5, 6],
    "+ rarest-3 share": [0, 1, 2, 4, 7],
    "+ coverage (every term)": [0, 1, 2, 4, 8],
    "coverage in place of keyword": [0, 1, 2, 5, 6],
}


def llm_figures(
    rows: list[dict[str, Any]], floor: float, gate: dict[str, Any], fold: str | None = None
) -> Any:
    return study_gate.figures(rows, WEIGHT, DEPTH, floor, gate, fold)


def choose(results: list[tuple[str, float, Any, Any]]) -> tuple[str, float, Any, Any] | None:
    """Dev alone: the most dev targets as a full card with dev leave-one-out and hand negatives <= DEV_CAP;
    ties to the fewer dev leave-one-out negatives."""
    held = [r for r in results if r[2]["dev-loo"][0] <= DEV_CAP and r[2]["dev-neg"][0] <= DEV_CAP]
    return max(held, key=lambda r: (round(r[2]["dev-pos"][0], 6), -r[2]["dev-loo"][0]), default=None)


def ships(base: dict[str, Any], first: dict[str, Any], f: dict[str, Any]) -> list[str]:
    """Why a candidate does not ship against the shipped gate `base` and the first stage `first` (empty: it
    ships): not worse by more than one standard error on any yardstick, better on fresh."""
    why = []
    for s in ("dev-pos", "fresh-pos"):
        if f[s][0] < first[s][0] - first[s][1]:
            why.append(f"{s} below the first stage by > 1 se")
        if f[s][0] < base[s][0] - base[s][1]:
            why.append(f"{s} below the shipped by > 1 se")
    for s in ("dev-neg", "fresh-neg", "dev-loo", "fresh-loo"):
        if f[s][0] > base[s][0] + base[s][1]:
            why.append(f"{s} above the shipped by > 1 se")
    better = f["fresh-loo"][0] < base["fresh-loo"][0] or f["fresh-neg"][0] < base["fresh-neg"][0]
    worse = f["fresh-loo"][0] > base["fresh-loo"][0] or f["fresh-neg"][0] > base["fresh-neg"][0]
    if not better or worse:
        why.append("not better on fresh")
    return why


def llm_study(rows: list[dict[str, Any]], floor: float) -> None:
    study_gate.GATE_FEATURES = LLM_FEATURES
    study_gate.gate_features = llm_features
    first = llm_figures(rows, floor, {"kind": "fused"})
    print(study_gate.line("first stage (fused rule)", first))
    shipped = study_gate.model_gate(rows, WEIGHT, DEPTH, LLM_VARIANTS["the four signals (shipped)"], 0.6)
    base = llm_figures(rows, floor, shipped)
    print(study_gate.line("shipped: the four signals >= 0.6", base))
    results = []
    for name, used in LLM_VARIANTS.items():
        for bar in BARS:
            gate = study_gate.model_gate(rows, WEIGHT, DEPTH, used, bar)
            dev = {k: v for k, v in llm_figures(rows, floor, gate).items() if k.startswith("dev")}
            results.append((name, bar, dev, gate))
    for name in LLM_VARIANTS:
        best = choose([r for r in results if r[0] == name])
        if best is None:
            print(f"{name}: no bar holds dev negatives at {DEV_CAP}")
            continue
        f = llm_figures(rows, floor, best[3])
        print(study_gate.line(f"{name} >= {best[1]} (bar chosen on dev)", f))
        for fold in "AB":
            print(study_gate.line(f"  fold {fold}", llm_figures(rows, floor, best[3], fold)))
    pick = choose([r for r in results if r[0] != "the four signals (shipped)"])
    if pick is not None:
        f = llm_figures(rows, floor, pick[3])
        why = ships(base, first, f)
        print(
            f"dev's choice: {pick[0]} >= {pick[1]}:",
            "SHIPS" if not why else "does not ship: " + "; ".join(why),
        )
        coef = dict(zip(LLM_FEATURES, pick[3]["w"][:-1].round(4).tolist(), strict=True))
        print("  coefficients", coef, "bias", round(float(pick[3]["w"][-1]), 4))


# ------------------------------------------------------------------------------------------- offline cards

OFFLINE_FEATURES = ("score", "margin", "keyword", "similarity", "cov", "cov_margin", "rare", "logit")


def offline_features(top: list[dict[str, Any]], i: int) -> list[float]:
    h = top[i]
    logit = h["logit"] if h.get("logit") is not None else -LOGIT_LIMIT
    # the hook labels its best HOOK_HITS (core.search): the margin is over those, as it will be at query time
    return [*shipped_offline(top, i), h["cov"], margin_of(top[:HOOK_HITS], i, "cov"), h["rare"], logit]


shipped_offline = study_offline_gate.features
OFFLINE_VARIANTS = {
    "score + margin + keyword (before)": [0, 1, 2],
    "coverage + its margin": [4, 5],
    "score + margin + coverage": [0, 1, 4],
    "score + margin + coverage + its margin": [0, 1, 4, 5],
    "score + margin + keyword + coverage + its margin": [0, 1, 2, 4, 5],
    "score + margin + rarest-3": [0, 1, 6],
    "+ the judge's logit: score + margin + coverage + its margin + logit": [0, 1, 4, 5, 7],
    "the judge's logit + coverage + its margin": [7, 4, 5],
}


def keep_targets(results: list[Any], first: dict[str, Any]) -> Any:
    """Dev alone: the fewest dev leave-one-out negatives carded with dev targets within one standard error of
    the first stage's and no more dev hand negatives; ties to the more targets."""
    floor = first["dev-pos"][0] - first["dev-pos"][1]
    held = [r for r in results if r[2]["dev-pos"][0] >= floor and r[2]["dev-neg"][0] <= first["dev-neg"][0]]
    return min(held, key=lambda r: (r[2]["dev-loo"][0], -r[2]["dev-pos"][0]), default=None)


RULES = {
    "dev negatives <= 0.04": lambda results, first: choose(results),
    "dev targets within 1 se": keep_targets,
}
OFFLINE_BARS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, *BARS)


def offline_study(rows: list[dict[str, Any]], floor: float, judged: bool) -> None:
    study_offline_gate.FEATURES = OFFLINE_FEATURES
    study_offline_gate.features = offline_features
    first = study_offline_gate.figures(rows, floor, None)
    print(study_gate.line("first stage = shipped (fused rule, no gate)", first))
    for fold in "AB":
        print(study_gate.line(f"  fold {fold}", study_offline_gate.figures(rows, floor, None, fold)))
    results = []
    for name, used in OFFLINE_VARIANTS.items():
        if 7 in used and not judged:
            continue
        w = study_offline_gate.train(rows, floor, used)
        for bar in OFFLINE_BARS:
            dev = {
                k: v
                for k, v in study_offline_gate.figures(rows, floor, (w, bar)).items()
                if k.startswith("dev")
            }
            results.append((name, bar, dev, (w, bar)))
    for variant, rule in product(OFFLINE_VARIANTS, RULES):
        chosen = [r for r in results if r[0] == variant]
        best = RULES[rule](chosen, first) if chosen else None
        if best is None:
            print(f"{variant}, {rule}: no bar")
            continue
        name = f"{variant} [{rule}]"
        f = study_offline_gate.figures(rows, floor, best[3])
        print(study_gate.line(f"{name} >= {best[1]} (bar chosen on dev)", f))
        for fold in "AB":
            print(study_gate.line(f"  fold {fold}", study_offline_gate.figures(rows, floor, best[3], fold)))
        why = ships(first, first, f)
        print("   ", "SHIPS" if not why else "does not ship: " + "; ".join(why))
        coef = dict(zip(OFFLINE_FEATURES, best[3][0][:-1].round(4).tolist(), strict=True))
        print("    coefficients", coef, "bias", round(float(best[3][0][-1]), 4))
    unjudged = [r for r in results if 7 not in OFFLINE_VARIANTS[r[0]]]
    for label, pool in (("without the judge", unjudged), ("the judge admitted", results)):
        pick = keep_targets(pool, first)
        if pick is not None:
            why = ships(first, first, study_offline_gate.figures(rows, floor, pick[3]))
            verdict = "SHIPS" if not why else "does not ship: " + "; ".join(why)
            print(f"dev's choice ({label}): {pick[0]} >= {pick[1]}:", verdict)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=Path, help="study_gate.py --only cards")
    parser.add_argument("--offline", type=Path, help="study_gate.py --only heuristic")
    args = parser.parse_args()
    if args.cards:
        data = pickle.loads(args.cards.read_bytes())
        rows = data["sets"]["cards"]
        annotate(rows)
        print("## LLM cards")
        llm_study(rows, data["floor"])
    if args.offline:
        data = pickle.loads(args.offline.read_bytes())
        rows = data["sets"]["heuristic"]
        annotate(rows)
        judged = any(h.get("logit") is not None for r in rows for h in r["verified"])
        print("## offline cards")
        offline_study(rows, data["floor"], judged)


if __name__ == "__main__":
    main()
