"""Study: two more signals for the LLM cards' full-card gate, beside the shipped four.

The fused score's margin over the best other verified hit (how far the card stands above its neighbour in the
first stage, not in the judge's eyes) and the cosine. Fitted on dev alone as study_gate.py fits the shipped gate
(judge weight 1.0, depth 3), read on fresh; a variant ships only if it holds leave-one-out negatives at 0.05 on
dev, is not worse on fresh by more than one standard error, keeps hand negatives and keeps targets as a full
card within one standard error of the first stage on both sets (docs/retrieval.md, "The full card's gate").

    python scripts/studies/study_gate_llm_extra.py /tmp/gate-cards.pkl   # study_gate.py --only cards
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import study_gate

WEIGHT, DEPTH = 1.0, 3
shipped_features = study_gate.gate_features


def with_fused_margin(top: list[dict[str, Any]], i: int) -> list[float]:
    h = top[i]
    others = [x["score"] for j, x in enumerate(top) if j != i]
    return [*shipped_features(top, i), h["score"] - max(others) if others else 0.0, h["sim"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    args = parser.parse_args()
    data = pickle.loads(args.cache.read_bytes())
    rows, floor = data["sets"]["cards"], data["floor"]
    study_gate.GATE_FEATURES = (*study_gate.GATE_FEATURES, "score_margin", "sim")
    study_gate.gate_features = with_fused_margin
    names = study_gate.GATE_FEATURES
    for used in ([0, 1, 2, 4], [0, 1, 2, 4, 5], [0, 1, 2, 4, 6], [0, 1, 2, 4, 5, 6]):
        for p in (0.5, 0.6, 0.7):
            gate = study_gate.model_gate(rows, WEIGHT, DEPTH, used, p)
            label = f"{[names[k] for k in used]} p>={p}"
            print(study_gate.line(label, study_gate.figures(rows, WEIGHT, DEPTH, floor, gate)))
            for fold in "AB":
                print(
                    study_gate.line(
                        f"  fold {fold}", study_gate.figures(rows, WEIGHT, DEPTH, floor, gate, fold)
                    )
                )


if __name__ == "__main__":
    main()
