"""Study: a full-card gate for offline cards, on signals that need no judge.

Offline (heuristic) cards are not judged, so their full card is the fused rule's: cosine and fused score over
their bars, and the words the prompt shares with the card weighing `strong_min_keyword`. Leave-one-out negatives
show that a neighbour on the same topic clears those bars. This fits a logistic gate over the fused score, its
margin over the best other verified hit, log(1 + the keyword half's BM25) and the cosine on the dev set alone
(the hook's would-be card of every dev positive, hand negative and leave-one-out negative) and reads it on the
fresh set; a bar ships only if it holds leave-one-out negatives at 0.05 on dev, is not worse on fresh by more
than one standard error, keeps hand negatives and keeps targets as a full card within one standard error of
the first stage on both sets.

Reads the cache scripts/studies/study_gate.py collects (offline cards need no judge: `--no-judge`):

    EPISODIC_RERANKER=none python scripts/studies/study_gate.py ../shared/transcripts ../shared/eval \
        --only heuristic --no-judge --cache /tmp/gate-offline.pkl
    python scripts/studies/study_offline_gate.py /tmp/gate-offline.pkl
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from study_gate import fit, shares

FEATURES = ("score", "margin", "keyword", "similarity")
MIN_KEYWORD = 1.0  # the shipped strong_min_keyword


def features(top: list[dict[str, Any]], i: int) -> list[float]:
    h = top[i]
    others = [x["score"] for j, x in enumerate(top) if j != i]
    margin = h["score"] - max(others) if others else 0.0
    return [h["score"], margin, math.log1p(max(h["kw"] or 0.0, 0.0)), h["sim"]]


def fused_tier(h: dict[str, Any], floor: float) -> str | None:
    """episodic.core.confidence's unjudged tiers, with the shipped keyword bar on a full card."""
    small = 0 < h["pool"] < 20
    if h["sim"] >= 2.2 * floor and (small or h["score"] >= 3.5):
        return "strong" if (h["kw"] is None or h["kw"] >= MIN_KEYWORD) else "weak"
    if h["sim"] >= 1.6 * floor and (small or h["score"] >= 3.25):
        return "weak"
    return None


def given(row: dict[str, Any], floor: float, gate: tuple[np.ndarray, float] | None) -> str | None:
    """The full card the hook gives: the best strong hit of the verified three, strong only past the gate."""
    top = row["verified"][:8]
    for i, h in enumerate(top[:3]):
        tier = fused_tier(h, floor)
        if tier == "strong" and gate is not None:
            w, bar = gate
            z = float(np.r_[features(top, i), 1.0] @ w)
            tier = "strong" if 1 / (1 + math.exp(-z)) >= bar else "weak"
        if tier == "strong":
            return str(h["sid"])
    return None


def figures(rows: list[dict[str, Any]], floor: float, gate: Any, fold: str | None = None) -> dict[str, Any]:
    return shares(rows, lambda r: given(r, floor, gate), fold)


def train(rows: list[dict[str, Any]], floor: float, used: list[int]) -> np.ndarray:
    """Dev only: every dev prompt's would-be full card under the fused rule; 1 when it is a positive's target."""
    xs, ys = [], []
    for r in rows:
        if not r["stick"].startswith("dev-"):
            continue
        top = r["verified"][:8]
        for i, h in enumerate(top[:3]):
            if fused_tier(h, floor) == "strong":
                xs.append([features(top, i)[j] for j in used])
                ys.append(float(r["target"] is not None and h["sid"] == r["target"]))
                break
    x, y = np.asarray(xs), np.asarray(ys)
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    w = fit((x - mean) / spread, y)
    raw = np.zeros(len(FEATURES) + 1)
    for j, k in enumerate(used):
        raw[k] = w[j] / spread[j]
    raw[-1] = w[-1] - float(np.sum(w[:-1] * mean / spread))
    print(f"  trained on {len(y)} dev would-be cards, {int(y.sum())} right", file=sys.stderr)
    return raw


def line(name: str, f: dict[str, Any]) -> str:
    return name + " | " + " | ".join(f"{k} {v[0]:.3f}±{v[1]:.3f}" for k, v in f.items())


def ships(base: dict[str, Any], f: dict[str, Any]) -> bool:
    return (
        f["dev-loo"][0] <= 0.05
        and f["fresh-loo"][0] <= base["fresh-loo"][0] + base["fresh-loo"][1]
        and f["dev-neg"][0] <= base["dev-neg"][0]
        and f["fresh-neg"][0] <= base["fresh-neg"][0]
        and all(f[s][0] >= base[s][0] - base[s][1] for s in ("dev-pos", "fresh-pos"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    args = parser.parse_args()
    data = pickle.loads(args.cache.read_bytes())
    floor, rows = data["floor"], data["sets"]["heuristic"]
    base = figures(rows, floor, None)
    print(line("first stage (fused rule)", base))
    for fold in "AB":
        print(line(f"  fold {fold}", figures(rows, floor, None, fold)))
    for used in ([0, 1], [0, 2], [1, 2], [0, 1, 2], [0, 1, 2, 3]):
        w = train(rows, floor, used)
        for bar in (0.3, 0.4, 0.5, 0.6, 0.7):
            f = figures(rows, floor, (w, bar))
            mark = " SHIPS" if ships(base, f) else ""
            print(line(f"gate {[FEATURES[k] for k in used]} p>={bar}", f) + mark)
            if mark:
                for fold in "AB":
                    print(line(f"  fold {fold}", figures(rows, floor, (w, bar), fold)))
                coef = dict(zip(FEATURES, w[:-1].round(4).tolist(), strict=True))
                print("  coefficients", coef, "bias", round(float(w[-1]), 4))


if __name__ == "__main__":
    main()
