"""Study: how many positives could the hook give a full card with the first stage's own signals?

For the best verified hit of each dev query and dev negative (what the hook reads), every combination of
bars on the fused score, the cosine and the margin to the next hit is tried *with the answers known* on the
whole dev set; the best share of positives whose top hit is the target and clears the bars is printed with
no negative, and at most 10 % of negatives, clearing them, and at least 80 % of the cards given being the
target. It is a ceiling, not a rule: no threshold on these signals can do better on this set.

    python scripts/studies/study_card_ceiling.py ../shared/transcripts ../shared/eval
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from study_relevance_judge import collect

SCORE_BARS = np.arange(0.0, 8.0, 0.25)
COSINE_BARS = np.arange(0.3, 0.8, 0.025)
MARGIN_BARS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def top_hit(row: dict[str, Any]) -> tuple[float, float, float, bool] | None:
    """(score, cosine, margin to the next hit, is the target) of the best verified hit; None when none."""
    hits = row["verified"]
    if not hits:
        return None
    margin = hits[0]["score"] - (hits[1]["score"] if len(hits) > 1 else 0.0)
    return hits[0]["score"], hits[0]["sim"], margin, hits[0]["sid"] == row["target"]


def ceiling(positives: list[Any], negatives: list[Any], limit: float, use_margin: bool) -> tuple[float, ...]:
    best: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    for score in SCORE_BARS:
        for cosine in COSINE_BARS:
            for margin in MARGIN_BARS if use_margin else (0.0,):

                def clears(hit: Any, s: float = score, c: float = cosine, m: float = margin) -> bool:
                    return hit is not None and hit[0] >= s and hit[1] >= c and hit[2] >= m

                given = [hit for hit in positives if clears(hit)]
                precision = float(np.mean([hit[3] for hit in given])) if given else 1.0
                as_card = float(np.mean([clears(hit) and hit[3] for hit in positives]))
                with_card = float(np.mean([clears(hit) for hit in negatives]))
                if with_card <= limit and precision >= 0.8 and as_card > best[0]:
                    best = (as_card, score, cosine, margin, precision, with_card)
    return best


def main(transcripts: Path, eval_dir: Path) -> None:
    data, _ = collect(transcripts, eval_dir)
    for label, rows in data.items():
        positives = [top_hit(r) for r in rows if r["kind"] == "dev"]
        negatives = [top_hit(r) for r in rows if r["kind"] == "neg"]
        first = np.mean([hit is not None and hit[3] for hit in positives])
        print(f"{label}: the target is the first verified hit for {first:.3f} of {len(positives)} positives")
        for limit in (0.0, 0.1):
            for use_margin in (False, True):
                as_card, score, cosine, margin, precision, with_card = ceiling(
                    positives, negatives, limit, use_margin
                )
                print(
                    f"  negatives with a card <= {limit:.2f}{' (margin bar too)' if use_margin else ''}: "
                    f"target as a full card at most {as_card:.3f} (score >= {score:.2f}, cosine >= {cosine:.3f}, "
                    f"margin >= {margin:.2f}; {precision:.2f} of cards the target, {with_card:.3f} of negatives)"
                )


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/transcripts"),
        Path(sys.argv[2]) if len(sys.argv) > 2 else Path("../shared/eval"),
    )
