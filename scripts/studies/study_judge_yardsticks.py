"""Study: the judge's weight and depth on two yardsticks, LLM cards, every outcome: the dev queries
(on which the first stage was tuned) and pseudo-queries (`episodic eval pseudo-queries`, on which nothing was).
The first stage's best 20 and the judge's logits are computed once per query, then every weight and depth is
replayed with the adapter's rule (score + weight x (logit - the pool's median logit)); "alone" orders by the
logit only. Prints recall@1 / recall@3 per fold.

    episodic eval pseudo-queries --transcripts ../shared/transcripts --out /tmp/pseudo.jsonl
    python scripts/studies/study_judge_yardsticks.py ../shared/transcripts ../shared/eval /tmp/pseudo.jsonl
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from study_relevance_judge import dev_card_sets, set_memory

DEPTHS = (3, 5, 8, 12, 20)
# a number: x the logit; "alone": the logit only; "p<n>": n x the judge's probability (a blend that an unsure
# judge barely moves)
WEIGHTS: tuple[float | str, ...] = (0.2, 0.5, 1.0, 2.0, "alone", "p1", "p2", "p3")


def collect(transcripts: Path, eval_dir: Path, pseudo: Path) -> dict[str, list[dict[str, Any]]]:
    from episodic.core.search import search_traces
    from episodic.evaluation.cardsets import fold_of
    from episodic.evaluation.queries import read_queries
    from episodic.judge.model import cross_encoder, default_model_dir
    from episodic.judge.reranker import card_text
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    settings = settings.model_copy(update={"max_k": max(DEPTHS), "reranker": "none"})
    encoder = cross_encoder(default_model_dir())
    yardsticks = {"dev": read_queries(eval_dir / "dev-queries.jsonl"), "pseudo": read_queries(pseudo)}
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        llm_cards = sets[1]
        memory = set_memory(settings, corpus, distiller, embedder, llm_cards, Path(workdir))
        memory = replace(memory, settings=settings, reranker=None)  # the first stage, production floor
        everything = SearchFilters(include_unverified=True)
        for name, queries in yardsticks.items():
            rows = []
            for n, q in enumerate(queries):
                hits = search_traces(memory, LOCAL_TENANT, q.query, k=max(DEPTHS), filters=everything)
                texts = [card_text(h.record) for h in hits]
                logits = encoder.scores(q.query, texts, 160).tolist() if texts else []
                pool = [(h.record.session_id, h.score, lg) for h, lg in zip(hits, logits, strict=True)]
                rows.append({"fold": fold_of(q.session_id), "target": q.session_id, "hits": pool})
                if n % 50 == 0:
                    print(f"{name}: {n}/{len(queries)}", file=sys.stderr, flush=True)
            out[name] = rows
    return out


def recall(rows: list[dict[str, Any]], weight: float | str, depth: int, fold: str) -> tuple[float, float]:
    at1 = at3 = n = 0
    for row in rows:
        if row["fold"] != fold:
            continue
        n += 1
        pool = row["hits"][:depth]
        if weight == "alone":
            order = sorted(pool, key=lambda h: -h[2])
        elif isinstance(weight, str):  # "p<n>": on the probability's scale
            probability = {h[0]: 1.0 / (1.0 + math.exp(-h[2])) for h in pool}
            ranked = sorted(probability.values())
            middle = ranked[len(ranked) // 2] if ranked else 0.0
            lift = float(weight[1:])
            order = sorted(pool, key=lambda h: -(h[1] + lift * (probability[h[0]] - middle)))
        else:
            logits = sorted(h[2] for h in pool)
            centre = logits[len(logits) // 2] if logits else 0.0
            order = sorted(pool, key=lambda h: -(h[1] + float(weight) * (h[2] - centre)))
        ids = [h[0] for h in order] + [h[0] for h in row["hits"][depth:]]
        at1 += ids[:1] == [row["target"]]
        at3 += row["target"] in ids[:3]
    return at1 / max(n, 1), at3 / max(n, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    parser.add_argument("pseudo", type=Path, help="the pseudo-queries JSONL")
    args = parser.parse_args()
    data = collect(args.transcripts, args.eval_dir, args.pseudo)
    for name, rows in data.items():
        first = " ".join(
            f"{f} {recall(rows, 0.0, 3, f)[0]:.3f}/{recall(rows, 0.0, 3, f)[1]:.3f}" for f in "AB"
        )
        print(f"{name}: first stage {first}  (recall@1/@3, fold A then B)")
        for depth in DEPTHS:
            cells = []
            for weight in WEIGHTS:
                a, b = recall(rows, weight, depth, "A"), recall(rows, weight, depth, "B")
                cells.append(f"w {weight}: {a[0]:.3f}/{a[1]:.3f} {b[0]:.3f}/{b[1]:.3f}")
            print(f"  depth {depth:2d}  " + " | ".join(cells))


if __name__ == "__main__":
    main()
