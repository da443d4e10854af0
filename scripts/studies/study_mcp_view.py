"""Study: what `search_traces`' default answer loses, per card set and fold. Each dev query and
negative is asked once over every outcome with the production floor (k = 5, the judge on as configured); then:
- the top-3 targets the tiers drop (below the faint bar), with their cosines;
- the faint bar's cosine factor replayed (1.0 = the embedder's floor .. 1.4 = the default): targets returned
  against recall@3 - 0.03, and negatives given anything;
- judged hits dropped below a judge probability, replayed the same way.

    python scripts/studies/study_mcp_view.py ../shared/transcripts ../shared/eval
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from study_relevance_judge import dev_card_sets, set_memory

FAINT_FACTORS = (1.0, 1.1, 1.2, 1.3, 1.4)
JUDGE_DROPS = (None, 0.0005, 0.002, 0.01, 0.05)


def collect(transcripts: Path, eval_dir: Path) -> tuple[float, dict[str, list[dict[str, Any]]]]:
    from episodic.core.search import search_traces
    from episodic.evaluation.cardsets import fold_of
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    settings = settings.model_copy(update={"rerank_seconds": 0.0})
    prompts = [
        (fold_of(q.session_id), q.session_id, q.query) for q in read_queries(eval_dir / "dev-queries.jsonl")
    ]
    prompts += [(fold_of(n.id), None, n.query) for n in read_negatives(eval_dir / "dev-negatives.jsonl")]
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for card_set in sets:
            memory = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            memory = replace(
                memory, settings=settings.model_copy(update={"max_k": 5})
            )  # the production floor
            rows = []
            for fold, target, text in prompts:
                hits = search_traces(
                    memory, LOCAL_TENANT, text, k=5, filters=SearchFilters(include_unverified=True)
                )
                rows.append(
                    {
                        "fold": fold,
                        "target": target,
                        "hits": [
                            {
                                "sid": h.record.session_id,
                                "sim": h.similarity,
                                "score": h.score,
                                "judge": h.judge,
                                "tier": h.confidence.value if h.confidence else None,
                            }
                            for h in hits[:3]
                        ],
                    }
                )
            out[card_set.label] = rows
    return embedder.default_min_similarity, out


def figures(rows: list[dict[str, Any]], fold: str, keep: Any) -> tuple[float, float, float]:
    """(targets returned, recall@3, negatives given anything) when `keep(hit)` decides what is shown."""
    pos = [r for r in rows if r["target"] and r["fold"] == fold]
    neg = [r for r in rows if not r["target"] and r["fold"] == fold]
    returned = sum(r["target"] in [h["sid"] for h in r["hits"] if keep(h)] for r in pos)
    at3 = sum(r["target"] in [h["sid"] for h in r["hits"]] for r in pos)
    anything = sum(any(keep(h) for h in r["hits"]) for r in neg)
    return returned / len(pos), at3 / len(pos), anything / len(neg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    args = parser.parse_args()
    floor, data = collect(args.transcripts, args.eval_dir)
    for label, rows in data.items():
        dropped = [
            h["sim"]
            for r in rows
            if r["target"]
            for h in r["hits"]
            if h["sid"] == r["target"] and h["tier"] is None
        ]
        top3 = sum(any(h["sid"] == r["target"] for h in r["hits"]) for r in rows if r["target"])
        print(
            f"{label}: {top3} targets in the top 3, {len(dropped)} below the faint bar (cosines "
            + ", ".join(f"{s:.2f}" for s in sorted(dropped))
            + ")"
        )
        for factor in FAINT_FACTORS:

            def keep(h: dict[str, Any], factor: float = factor) -> bool:
                return h["tier"] is not None or (h["sim"] >= factor * floor and h["score"] >= 2.0)

            cells = [figures(rows, fold, keep) for fold in "AB"]
            print(
                f"  faint factor {factor}: "
                + " | ".join(
                    f"{fold}: returned {r:.3f} (recall@3 - 0.03 = {a - 0.03:.3f}), negatives with anything {n:.3f}"
                    for fold, (r, a, n) in zip("AB", cells, strict=True)
                )
            )
        for bar in JUDGE_DROPS:

            def judged(h: dict[str, Any], bar: float | None = bar) -> bool:
                return h["tier"] is not None and not (
                    bar is not None and h["judge"] is not None and h["judge"] < bar
                )

            cells = [figures(rows, fold, judged) for fold in "AB"]
            print(
                f"  judged hits dropped below p {bar}: "
                + " | ".join(
                    f"{fold}: returned {r:.3f}, negatives with anything {n:.3f}"
                    for fold, (r, _, n) in zip("AB", cells, strict=True)
                )
            )


if __name__ == "__main__":
    main()
