"""Would the session's own opening words help the default retrieval? A measurement, not a default.

    python eval/exchange_fusion.py [--weights 0.25,0.5,1] [--exchanges 1,3,20] \
        [--transcripts DIR] [--queries FILE] [--cards DIR]

For each weight w and number of exchanges n, ranks every session by
`z(default fused score) + w * z(best cosine of the query with the session's first n raw exchanges)`
(z: standardised over the corpus; exchanges as the `raw-exchanges` baseline cuts them), on the distilled
cards and on the cards folder, and prints recall@3 overall / easy / hard and per fold of the eval's split.
w = 0 is the default itself. The result steers whether an "opening" vector is worth storing (README).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.runner import run_evaluation
from episodic.evaluation.systems.base import SYSTEMS, register_system
from episodic.evaluation.systems.cards import DefaultSystem
from episodic.evaluation.systems.raw import exchanges
from episodic.models import LOCAL_TENANT
from episodic.search import search_traces
from episodic.settings import load_settings

REPO = Path(__file__).resolve().parents[1]


def standardised(scores: np.ndarray) -> np.ndarray:
    spread = float(scores.std()) or 1.0
    return (scores - float(scores.mean())) / spread


def fused_system(weight: float, count: int) -> str:
    """Register (once) the default system plus the opening-exchange term, and return its name."""
    name = f"hybrid+ex{count}x{weight:g}"
    if name in SYSTEMS:
        return name

    class ExchangeFused(DefaultSystem):
        description = f"default fused score + {weight:g} x z(best cosine of the first {count} exchanges)"

        def build(self, corpus: EvalCorpus) -> None:
            super().build(corpus)
            self.sessions = list(corpus.cards)
            texts: list[str] = []
            owners: list[int] = []
            for index, session_id in enumerate(self.sessions):
                for text in exchanges(corpus.trajectories[session_id], limit=count):
                    texts.append(text)
                    owners.append(index)
            self.owners = np.array(owners, dtype=np.int64)
            self.vectors = self.context.embed(texts, f"{name}: embedding exchanges")

        def rank(self, query: str) -> list[str]:
            hits = search_traces(self.memory, LOCAL_TENANT, query, k=self.size, filters=self._filters)
            found = {hit.record.session_id: hit.score for hit in hits}
            floor = min(found.values(), default=0.0)
            fused = np.array([found.get(s, floor) for s in self.sessions], dtype=np.float64)
            vector = self.context.embedder.embed([query])[0]
            best = np.full(len(self.sessions), -np.inf)
            if len(self.owners):
                np.maximum.at(best, self.owners, self.vectors @ vector)
            finite = np.isfinite(best)
            best[~finite] = float(best[finite].min()) if finite.any() else 0.0
            total = standardised(fused) + weight * standardised(best)
            return [self.sessions[i] for i in np.argsort(-total, kind="stable")]

    ExchangeFused.name = name
    register_system(ExchangeFused)
    return name


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--transcripts", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--queries", default=str(REPO.parent / "shared" / "eval" / "dev-queries.jsonl"))
    parser.add_argument("--cards", default=str(REPO.parent / "shared" / "eval" / "cards"))
    parser.add_argument("--weights", default="0,0.5,1")
    parser.add_argument("--exchanges", default="1,20")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = [
        fused_system(float(w), int(n)) for n in args.exchanges.split(",") for w in args.weights.split(",")
    ]
    try:
        result = run_evaluation(
            load_settings(), [args.transcripts], Path(args.queries), names, cards_dir=args.cards
        )
    finally:  # the registry is global: `episodic eval`'s default systems must not gain these
        for name in names:
            SYSTEMS.pop(name, None)
    table: dict[str, Any] = {}
    for name, system in result.systems.items():
        table[name] = {
            "recall@3": round(system.metrics.recall_at_k, 3),
            **{d: round(m.recall_at_k, 3) for d, m in system.by_difficulty.items()},
            **{f"fold {f}": round(m.recall_at_k, 3) for f, m in system.by_fold.items()},
        }
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        for name, row in table.items():
            print(f"{name:32} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
    return table


if __name__ == "__main__":
    main()
