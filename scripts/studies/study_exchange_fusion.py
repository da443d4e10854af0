"""Would the session's own opening words help the default retrieval? A measurement, not a default.

    python scripts/studies/study_exchange_fusion.py [--weights 0.25,0.5,1] [--exchanges 1,3,20] [--blend] [--mixed SEED] \
        [--transcripts DIR] [--queries FILE] [--cards DIR]

For each weight w and number of exchanges n, ranks every session by
`z(default fused score) + w * z(best cosine of the query with the session's first n raw exchanges)`
(z: standardised over the corpus; exchanges as the `raw-exchanges` baseline cuts them), on the distilled
cards and on the cards folder, and prints recall@3 overall / easy / hard and per fold of the eval's split.
w = 0 is the default itself. The result steers whether an "opening" vector is worth storing (docs/evaluation.md).

`--blend` stores the exchanges instead as extra renderings of *heuristic* cards only (weight w / n each)
in the store's own weighted mean of rendering cosines: a session without them (an LLM-written card) is
ranked on its card renderings alone, as the store already does for a missing rendering. Its w = 0 is the
card renderings alone (the default before the `opening` rendering); n = 1, w = 1 is today's default. `--mixed SEED`
replaces the cards folder by a random half of it (the other half distilled by the heuristic): an index
mixing the two distillers, where the blend must not favour one kind of card.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from episodic.cards.opening import exchanges
from episodic.core.search import search_traces
from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.runner import run_evaluation
from episodic.evaluation.systems.base import SYSTEMS, register_system
from episodic.evaluation.systems.cards import DefaultSystem
from episodic.kernel.models import LOCAL_TENANT, OPENING, CardRecord, IndexManifest, SearchFilters
from episodic.kernel.ports import StoredVector
from episodic.kernel.settings import load_settings
from episodic.store.render import render

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


def blended_system(weight: float, count: int, folder_ids: frozenset[str]) -> str:
    """Register (once) the store ranking with the first `count` exchanges of each heuristic card as extra
    renderings (weight / count each) in its weighted mean, and return its name."""
    name = f"blend+ex{count}x{weight:g}"
    if name in SYSTEMS:
        return name

    class ExchangeBlended(DefaultSystem):
        description = (
            f"the store's blend with the first {count} exchanges of heuristic cards at weight {weight:g}"
        )

        def build(self, corpus: EvalCorpus) -> None:
            from episodic.assembly import sqlite_store_at
            from episodic.evaluation.cardsets import IMPORTED

            settings = self.context.settings
            card_renderings = [
                r for r in settings.renderings if r != OPENING
            ]  # the exchanges stand in for it
            extra = [f"exchange{i}" for i in range(count)]
            self.manifest = IndexManifest(
                embedder_id=self.context.embedder.id,
                dimension=self.context.embedder.dimension,
                renderings=[*card_renderings, *extra],
            )
            path = self.context.workdir / f"{name}.sqlite3"
            path.unlink(missing_ok=True)
            self.store = sqlite_store_at(settings, path)
            self.store.rendering_weights = {
                **settings.rendering_weights,
                **{r: weight / count for r in extra},
            }
            imported = corpus.distiller == IMPORTED  # the folder set: its folder cards are LLM-written
            self.with_exchanges = 0
            self.context.progress.start(f"{name}: indexing cards", len(corpus.cards))
            distiller = corpus.distiller
            assert distiller is not None  # load_corpus distils with one distiller and records it
            for session_id, card in corpus.cards.items():
                heuristic = not (imported and session_id in folder_ids)
                texts = [render(card, r) for r in card_renderings]
                names = list(card_renderings)
                if heuristic:
                    found = exchanges(corpus.trajectories[session_id], limit=count)
                    texts += found
                    names += extra[: len(found)]
                    self.with_exchanges += bool(found)
                vectors = self.context.embedder.embed(texts)
                record = CardRecord(
                    card=card,
                    session_id=session_id,
                    source_sha256="lab",
                    distiller=distiller,
                )
                self.store.upsert(
                    record,
                    [StoredVector(r, t, v) for r, t, v in zip(names, texts, vectors, strict=True)],
                    self.manifest,
                )
                self.context.progress.advance()
            self.size = max(len(corpus.cards), 1)

        def rank(self, query: str) -> list[str]:
            vector = self.context.embedder.embed([query])[0]
            filters = SearchFilters(include_unverified=True)
            hits = self.store.query(LOCAL_TENANT, vector, query, self.size, filters, self.manifest, -1.0)
            return [hit.record.session_id for hit in hits]

        def query_notes(self, query: str, target: str) -> dict[str, Any]:
            return {}

        def summary_notes(
            self, per_query: Sequence[dict[str, Any]], ranks: Sequence[int | None], k: int
        ) -> dict[str, Any]:
            return {"sessions_with_exchanges": self.with_exchanges}

    ExchangeBlended.name = name
    register_system(ExchangeBlended)
    return name


def half_folder(cards: Path, seed: int, into: Path) -> Path:
    """A copy of a random half of the cards folder (by a hash of the seed and the session id)."""
    for path in sorted(cards.glob("*.json")):
        if hashlib.sha256(f"{seed}:{path.stem}".encode()).digest()[1] % 2 == 0:
            shutil.copy(path, into / path.name)
    return into


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--transcripts", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--queries", default=str(REPO.parent / "shared" / "eval" / "dev-queries.jsonl"))
    parser.add_argument("--cards", default=str(REPO.parent / "shared" / "eval" / "cards"))
    parser.add_argument("--weights", default="0,0.5,1")
    parser.add_argument("--exchanges", default="1,20")
    parser.add_argument("--blend", action="store_true", help="exchanges as renderings of heuristic cards")
    parser.add_argument("--mixed", type=int, default=None, metavar="SEED", help="half the folder's cards")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="exchange-fusion-") as scratch:
        cards = Path(args.cards)
        if args.mixed is not None:
            cards = half_folder(cards, args.mixed, Path(scratch))
        folder_ids = frozenset(p.stem for p in cards.glob("*.json"))
        pairs = [(float(w), int(n)) for n in args.exchanges.split(",") for w in args.weights.split(",")]
        names = [blended_system(w, n, folder_ids) if args.blend else fused_system(w, n) for w, n in pairs]
        if args.blend:
            names = ["hybrid", *names]
        try:
            result = run_evaluation(
                load_settings(), [args.transcripts], Path(args.queries), names, cards_dir=cards
            )
        finally:  # the registry is global: `episodic eval`'s default systems must not gain these
            for name in names:
                if name != "hybrid":
                    SYSTEMS.pop(name, None)
    table: dict[str, Any] = {}
    for name, system in result.systems.items():
        table[name] = {
            "recall@3": round(system.metrics.recall_at_k, 3),
            **{d: round(m.recall_at_k, 3) for d, m in system.by_difficulty.items()},
            **{f"fold {f}": round(m.recall_at_k, 3) for f, m in system.by_fold.items()},
        }
        if "sessions_with_exchanges" in system.notes:
            table[name]["sessions with exchanges"] = system.notes["sessions_with_exchanges"]
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        for name, row in table.items():
            print(
                f"{name:32} "
                + "  ".join(f"{k} {v}" if isinstance(v, int) else f"{k} {v:.3f}" for k, v in row.items())
            )
    return table


if __name__ == "__main__":
    main()
