"""Study: the LLM cards' full-card gate fitted on pseudo-queries alone, read on dev and fresh, both untuned.

The shipped gate was fitted on the dev set and its bar chosen there, so its dev figures flatter it. Here the same
logistic model (study_gate.model_gate, judge weight 1.0, depth 3) is fitted on pseudo-queries only: a session's
later prompts as targets (`pseudo-pos`) against the same prompts with their own session left out by the store's
filter (`pseudo-loo`, where any full card is a neighbour). Two variants: the shipped four signals, and the same
plus the fused score's margin (study_gate_llm_extra). The variant and its bar are chosen on pseudo alone, by the
shipped gate's rule transposed: the most pseudo targets as a full card with at most PSEUDO_CAP of the pseudo
leave-one-out negatives given one. That one choice is then read on dev and fresh beside the shipped gate (its
coefficients as the package holds them, at its bar) and the first stage (the fused rule, no judge).

It ships only if, on dev and on fresh alike, it is not worse than the shipped gate by more than the shipped
gate's standard error on targets as a full card, hand negatives or leave-one-out negatives given one, and it
gives fewer fresh leave-one-out negatives a full card; then --write saves its coefficients in the package's
format (the bias moved so that the shipped bar, `judge_gate`, applies).

    EPISODIC_HOME=$(mktemp -d) episodic eval pseudo-queries --transcripts ../shared/transcripts --out /tmp/pseudo.jsonl
    EPISODIC_RERANKER=none python scripts/studies/study_gate.py ../shared/transcripts ../shared/eval \
        --only cards --pseudo /tmp/pseudo.jsonl --cache /tmp/pgate-cards.pkl
    python scripts/studies/study_gate_pseudo.py /tmp/pgate-cards.pkl --cross-fit --write /tmp/full_card_gate.pseudo.json
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import study_gate
import study_gate_llm_extra

WEIGHT, DEPTH = 1.0, 3
PSEUDO_CAP = 0.04  # the shipped gate's rule (study_gate_coverage.DEV_CAP), on pseudo-queries
DEV_CAP = PSEUDO_CAP  # the same rule on one dev fold: its leave-one-out and hand negatives alike
BARS = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))
VARIANTS = {"the four signals": [0, 1, 2, 4], "the four signals + fused margin": [0, 1, 2, 4, 5]}
SETS = ("dev", "fresh")
STICKS = ("pos", "neg", "loo")


def shipped_gate() -> dict[str, Any]:
    """The package's LLM-card gate at the configured bar, as a study_gate model gate."""
    from episodic.core.full_card_gate import shipped_gates
    from episodic.kernel.settings import Settings

    gate = shipped_gates()["llm"]
    w = np.zeros(len(study_gate.GATE_FEATURES) + 1)
    for name, coefficient in gate.coefficients.items():
        w[study_gate.GATE_FEATURES.index(name)] = coefficient
    w[-1] = gate.bias
    return {"kind": "model", "w": w, "p": Settings().judge_gate, "used": list(gate.coefficients)}


def read(rows: list[dict[str, Any]], floor: float, gate: dict[str, Any], fold: str | None = None) -> Any:
    weight = None if gate["kind"] == "fused" else WEIGHT  # the first stage: no judge, no reordering
    return study_gate.figures(rows, weight, DEPTH, floor, gate, fold)


def choose(results: list[tuple[str, float, Any, Any]]) -> tuple[str, float, Any, Any] | None:
    """Pseudo alone: the most pseudo targets as a full card with pseudo leave-one-out <= PSEUDO_CAP; ties to the
    fewer leave-one-out negatives, then the simpler variant, then the lower bar."""
    held = [r for r in results if r[2]["pseudo-loo"][0] <= PSEUDO_CAP]
    order = list(VARIANTS)
    return min(
        held,
        key=lambda r: (-round(r[2]["pseudo-pos"][0], 6), r[2]["pseudo-loo"][0], order.index(r[0]), r[1]),
        default=None,
    )


def shortfalls(base: dict[str, Any], f: dict[str, Any]) -> list[str]:
    """Why `f` does not ship against the shipped gate `base` (empty: it ships)."""
    why = []
    for name in SETS:
        if f[f"{name}-pos"][0] < base[f"{name}-pos"][0] - base[f"{name}-pos"][1]:
            why.append(f"{name} targets below the shipped gate's by more than one se")
        for kind in ("neg", "loo"):
            s = f"{name}-{kind}"
            if f[s][0] > base[s][0] + base[s][1]:
                why.append(f"{s} above the shipped gate's by more than one se")
    if f["fresh-loo"][0] >= base["fresh-loo"][0]:
        why.append("fresh leave-one-out not below the shipped gate's")
    return why


def cell(f: dict[str, Any], name: str, errors: bool = True) -> str:
    parts = []
    for kind in STICKS:
        s = f"{name}-{kind}"
        if s in f:
            share, err, _ = f[s]
            parts.append(f"{share:.3f} ± {err:.3f}" if errors else f"{share:.3f}")
    return " / ".join(parts)


def table(rows: list[dict[str, Any]], floor: float, gates: list[tuple[str, dict[str, Any]]]) -> None:
    print(
        "| gate (LLM cards) | pseudo: targets / leave-one-out | dev: targets / hand / leave-one-out"
        " | fresh: targets / hand / leave-one-out |"
    )
    print("|---|---|---|---|")
    for label, gate in gates:
        f = read(rows, floor, gate)
        print(f"| {label} | {cell(f, 'pseudo')} | {cell(f, 'dev')} | {cell(f, 'fresh')} |")
    print("\nfold A — fold B\n")
    print("| gate (LLM cards) | pseudo | dev | fresh |")
    print("|---|---|---|---|")
    for label, gate in gates:
        a, b = read(rows, floor, gate, "A"), read(rows, floor, gate, "B")
        folds = [f"{cell(a, n, False)} — {cell(b, n, False)}" for n in ("pseudo", *SETS)]
        print(f"| {label} | " + " | ".join(folds) + " |")


def cross_fit(rows: list[dict[str, Any]], floor: float) -> dict[str, tuple[float, float, int]]:
    """The dev-fitted family read out of fold: the four signals fitted on one dev fold and their bar chosen there
    by the shipped rule, each prompt read with the gate of the fold it is not in; pooled figures."""
    gates = {}
    for fold in "AB":
        train = [r for r in rows if r["fold"] == fold]
        fitted = study_gate.model_gate(train, WEIGHT, DEPTH, VARIANTS["the four signals"], BARS[0])
        held = []
        for bar in BARS:
            f = read(train, floor, {**fitted, "p": bar})
            if f["dev-loo"][0] <= DEV_CAP and f["dev-neg"][0] <= DEV_CAP:
                held.append((round(f["dev-pos"][0], 6), -f["dev-loo"][0], -bar))
        best = max(held, default=None)
        bar = -best[2] if best else 1.0  # no bar holds: nothing carded
        gates["B" if fold == "A" else "A"] = {**fitted, "p": bar}
        print(f"fitted on dev fold {fold}: bar {bar}, read on fold {'B' if fold == 'A' else 'A'}")
    return study_gate.shares(
        rows, lambda r: study_gate.hook_given(r, WEIGHT, DEPTH, floor, gates[r["fold"]])[0]
    )


def write_gate(path: Path, gate: dict[str, Any], bar: float, shipped_bar: float) -> None:
    """The package's JSON format; the bias moved by logit(shipped bar) - logit(bar), so p >= the shipped bar
    says what p >= `bar` says under the fitted bias."""
    shift = math.log(shipped_bar / (1 - shipped_bar)) - math.log(bar / (1 - bar))
    coefficients = {n: round(float(gate["w"][study_gate.GATE_FEATURES.index(n)]), 4) for n in gate["used"]}
    body = {
        "about": "episodic.core.full_card_gate, LLM cards: fitted by scripts/studies/study_gate_pseudo.py on "
        "pseudo-queries alone (targets against their own session left out; judge weight 1.0, depth 3), its bar "
        f"chosen there and folded into the bias for judge_gate = {shipped_bar}; read on dev and fresh "
        "(docs/retrieval.md).",
        "kinds": {"llm": {"coefficients": coefficients, "bias": round(float(gate["w"][-1]) + shift, 4)}},
    }
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="study_gate.py --only cards --pseudo … --cache")
    parser.add_argument("--write", type=Path, help="where to save the pseudo-fitted gate, if it ships")
    parser.add_argument(
        "--cross-fit",
        action="store_true",
        help="also read the dev-fitted gate out of fold on dev (cross-fitting)",
    )
    args = parser.parse_args()
    data = pickle.loads(args.cache.read_bytes())
    rows, floor = data["sets"]["cards"], data["floor"]
    if not any(r["stick"] == "pseudo-loo" for r in rows):
        sys.exit(f"{args.cache} holds no pseudo-queries: collect it with study_gate.py --pseudo")
    study_gate.GATE_FEATURES = (*study_gate.GATE_FEATURES, "score_margin", "sim")
    study_gate.gate_features = study_gate_llm_extra.with_fused_margin
    shipped = shipped_gate()
    results = []
    print("## the bar on pseudo alone: targets / leave-one-out")
    for name, used in VARIANTS.items():
        for bar in BARS:
            gate = study_gate.model_gate(rows, WEIGHT, DEPTH, used, bar, train_on="pseudo")
            pseudo = {k: v for k, v in read(rows, floor, gate).items() if k.startswith("pseudo")}
            results.append((name, bar, pseudo, gate))
            print(f"{name} >= {bar}: {cell(pseudo, 'pseudo')}")
    picks = {name: choose([r for r in results if r[0] == name]) for name in VARIANTS}
    pick = choose(results)
    gates: list[tuple[str, dict[str, Any]]] = [
        ("first stage (fused rule, no judge)", {"kind": "fused"}),
        (f"shipped: the four signals, dev-fitted, >= {shipped['p']}", shipped),
        (
            f"the four signals refitted on dev from this cache, >= {shipped['p']}",
            study_gate.model_gate(rows, WEIGHT, DEPTH, VARIANTS["the four signals"], shipped["p"]),
        ),
    ]
    for name, best in picks.items():
        if best is None:
            print(f"{name}: no bar holds pseudo leave-one-out at {PSEUDO_CAP}")
            continue
        chosen = " (pseudo's choice)" if best is pick else ""
        gates.append((f"{name}, pseudo-fitted, >= {best[1]}{chosen}", best[3]))
    print("\n## read on every yardstick (± one standard error)\n")
    table(rows, floor, gates)
    if args.cross_fit:
        print("\n## the dev-fitted family out of fold (fit and bar on one dev fold, read on the other)\n")
        out = cross_fit(rows, floor)
        print(f"| four signals, dev-fitted out of fold | {cell(out, 'dev')} | {cell(out, 'fresh')} |")
    if pick is None:
        print("\nno pseudo-fitted gate holds pseudo leave-one-out negatives at the cap: nothing ships")
        return
    base = read(rows, floor, shipped)
    why = shortfalls(base, read(rows, floor, pick[3]))
    coefficients = dict(zip(study_gate.GATE_FEATURES, pick[3]["w"][:-1].round(4).tolist(), strict=True))
    print(
        f"\npseudo's choice: {pick[0]} >= {pick[1]}:",
        "SHIPS" if not why else "does not ship: " + "; ".join(why),
    )
    print("  coefficients", coefficients, "bias", round(float(pick[3]["w"][-1]), 4))
    if not why and args.write:
        write_gate(args.write, pick[3], pick[1], shipped["p"])
        print(f"  written to {args.write}")


if __name__ == "__main__":
    main()
