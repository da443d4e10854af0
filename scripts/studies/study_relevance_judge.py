"""Study: does a learned second stage over the first stage's top 20 beat the fused score?

The judge is a logistic regression over seven signals per candidate: fused score, cosine / floor, margin to
the next hit, gap to the best hit, share of the query's content words in the card, in its problem, and
"first keyword hit". It is trained only on pseudo-queries, never on the dev queries: a session's later
prompts (continuations) and the other card set's problem statement, each asked once with its session in
the index (label 1 for it) and once with it left out (every candidate 0: a problem no session covers).
The dev queries are then read per fold: recall@1 of the judge's order against the first stage's, and the
best share of positives given a full card with at most 0 or 10 % of the dev negatives given one.

    python scripts/studies/study_relevance_judge.py ../shared/transcripts ../shared/eval
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

TOP = 20
NAMES = ("score", "cosine/floor", "gap_next", "gap_top", "coverage", "problem_coverage", "first_keyword")
STOP = set(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "my",
        "our",
        "your",
        "i",
        "we",
        "you",
        "not",
        "no",
        "but",
        "at",
        "by",
        "from",
        "as",
        "into",
        "when",
        "after",
        "before",
        "does",
        "do",
        "did",
        "can",
        "cant",
        "why",
        "how",
        "what",
        "which",
        "there",
        "their",
        "them",
        "then",
        "than",
        "so",
        "if",
        "its",
        "has",
        "have",
        "had",
        "just",
        "only",
        "still",
        "also",
        "get",
        "gets",
        "got",
        "use",
        "using",
        "used",
    ]
)
_TOKEN = re.compile(r"[^\W_]+")


def fold(key: str) -> str:
    return "AB"[hashlib.sha256(key.encode()).digest()[0] % 2]


def words(text: str) -> set[str]:
    return {w for w in _TOKEN.findall(text.lower()) if len(w) > 2 and w not in STOP}


def card_text(card: dict[str, Any]) -> str:
    parts = [card.get("problem") or "", card.get("insight") or ""]
    for key in ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks", "tags"):
        parts += card.get(key) or []
    return " ".join(parts)


def features(query: str, hits: list[dict[str, Any]], floor: float) -> np.ndarray:
    asked = words(query)
    scores = [h["score"] for h in hits]
    rows = []
    for i, h in enumerate(hits):
        following = scores[i + 1] if i + 1 < len(scores) else scores[i] - 1.0
        rows.append(
            [
                h["score"],
                h["sim"] / floor,
                h["score"] - following,
                scores[0] - h["score"],
                len(asked & words(card_text(h["card"]))) / max(len(asked), 1),
                len(asked & words(h["card"].get("problem") or "")) / max(len(asked), 1),
                1.0 if h["kw"] == 1 else 0.0,
            ]
        )
    return np.asarray(rows, dtype=float).reshape(-1, len(NAMES))


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Logistic regression by Newton's method, an L2 penalty on the weights (not the bias)."""
    x1 = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x1.shape[1])
    penalty = np.r_[np.ones(len(w) - 1), 0.0]
    for _ in range(50):
        p = 1 / (1 + np.exp(-x1 @ w))
        grad = x1.T @ (p - y) + l2 * penalty * w
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.diag(penalty)
        w -= np.linalg.solve(hess, grad)
    return w


def dev_card_sets(transcripts: Path, eval_dir: Path) -> tuple[Any, Any, Any, list[Any], Any]:
    """(settings, corpus, distiller, [distilled cards, the eval's cards folder], embedder), as `episodic eval`."""
    from episodic.assembly import build_distiller, build_source
    from episodic.evaluation.cache import WorkCache
    from episodic.evaluation.cardsets import distilled_set, folder_set, read_folder
    from episodic.evaluation.corpus import distill_corpus, load_corpus
    from episodic.evaluation.runner import default_embedder
    from episodic.kernel.settings import Settings

    settings = Settings()
    cache = WorkCache(settings.cache_dir / "eval")
    corpus = load_corpus(settings, build_source(settings), [str(transcripts)], cache)
    distiller = build_distiller(settings)
    distill_corpus(corpus, settings, distiller, cache)
    sets = [
        distilled_set(corpus),
        folder_set(corpus, eval_dir / "cards", read_folder(corpus, eval_dir / "cards", settings)),
    ]
    return settings, corpus, distiller, sets, default_embedder(settings)


def set_memory(
    settings: Any, corpus: Any, distiller: Any, embedder: Any, card_set: Any, workdir: Path
) -> Any:
    """The production read path over one card set, on a scratch SQLite index in `workdir` (as the eval)."""
    from episodic.evaluation.systems.base import SystemContext
    from episodic.evaluation.systems.cards import default_memory

    view = replace(
        corpus, cards=card_set.cards, distiller=card_set.distiller, card_distillers=card_set.distillers
    )
    (workdir / card_set.label).mkdir()
    return default_memory(SystemContext(settings, embedder, distiller, workdir / card_set.label), view)


def collect(transcripts: Path, eval_dir: Path) -> tuple[dict[str, list[dict[str, Any]]], float]:
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters
    from episodic.scrub import Scrubber

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    scrub = Scrubber.from_settings(settings)
    prompts: list[tuple[str, str | None, str]] = [
        ("dev", q.session_id, q.query) for q in read_queries(eval_dir / "dev-queries.jsonl")
    ]
    prompts += [("neg", None, n.query) for n in read_negatives(eval_dir / "dev-negatives.jsonl")]
    data: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for position, card_set in enumerate(sets):
            memory = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            asked = list(prompts)
            for sid, trajectory in corpus.trajectories.items():
                later = [p for p in trajectory.prompts[1:] if 8 <= len(p.split()) <= 80][:2]
                asked += [("pseudo", sid, " ".join(p.split())[:300]) for p in later]
                other = sets[1 - position].cards.get(sid)
                if other is not None and other.problem:
                    asked.append(("pseudo", sid, other.problem[:300]))
            texts = [scrub.scrub(text[:2000]) for _, _, text in asked]
            rows = []
            for (kind, target, _), text, vector in zip(asked, texts, embedder.embed(texts), strict=True):
                entry: dict[str, Any] = {"kind": kind, "target": target, "query": text}
                for name, include in (("verified", False), ("all", True)):
                    hits = memory.store.query(
                        LOCAL_TENANT,
                        vector,
                        text,
                        TOP,
                        SearchFilters(include_unverified=include),
                        memory.manifest,
                        embedder.default_min_similarity,
                    )
                    entry[name] = [
                        {
                            "sid": h.record.session_id,
                            "score": h.score,
                            "sim": h.similarity,
                            "kw": h.keyword_rank,
                            "card": h.record.card.model_dump(mode="json"),
                        }
                        for h in hits
                    ]
                rows.append(entry)
            data[card_set.label] = rows
    return data, embedder.default_min_similarity


def main(transcripts: Path, eval_dir: Path) -> None:
    data, floor = collect(transcripts, eval_dir)
    xs, ys = [], []
    for rows in data.values():
        for row in (r for r in rows if r["kind"] == "pseudo"):
            for leave_out in (False, True):
                hits = [h for h in row["all"][:10] if not (leave_out and h["sid"] == row["target"])]
                if hits:
                    xs.append(features(row["query"], hits, floor))
                    ys.append(np.array([float(h["sid"] == row["target"]) for h in hits]))
    w = fit(np.vstack(xs), np.concatenate(ys))
    print(
        "judge weights:",
        ", ".join(f"{n} {v:+.2f}" for n, v in zip(NAMES, w, strict=False)),
        f"bias {w[-1]:+.2f}",
    )

    def judged(row: dict[str, Any], hits: list[dict[str, Any]]) -> np.ndarray:
        x1 = np.hstack([features(row["query"], hits, floor), np.ones((len(hits), 1))])
        return 1 / (1 + np.exp(-x1 @ w))

    for label, rows in data.items():
        for part in "AB":
            dev = [r for r in rows if r["kind"] == "dev" and fold(r["target"]) == part]
            first = np.mean([bool(r["verified"]) and r["verified"][0]["sid"] == r["target"] for r in dev])
            rerank = np.mean(
                [
                    bool(r["verified"])
                    and r["verified"][int(np.argmax(judged(r, r["verified"])))]["sid"] == r["target"]
                    for r in dev
                ]
            )
            print(
                f"{label} fold {part}: recall@1 (verified) first stage {first:.3f}, judge's order {rerank:.3f}"
            )
        for part in "AB":
            chosen = [
                r for r in rows if r["kind"] in ("dev", "neg") and fold(r["target"] or r["query"]) == part
            ]
            for name, scorer, bars in (
                (
                    "fused score",
                    lambda r, h: np.array([x["score"] if x["sim"] >= 2.2 * floor else -9 for x in h]),
                    np.arange(2, 7.01, 0.25),
                ),
                ("judge", judged, np.arange(0.05, 0.96, 0.025)),
            ):
                curve = []
                for bar in bars:
                    pos = [r for r in chosen if r["kind"] == "dev"]
                    neg = [r for r in chosen if r["kind"] == "neg"]
                    card = {
                        id(r): (
                            r["verified"][0]["sid"]
                            if r["verified"] and scorer(r, r["verified"][:1])[0] >= bar
                            else None
                        )
                        for r in chosen
                    }
                    hit = np.mean([card[id(r)] == r["target"] for r in pos])
                    wrong = np.mean([card[id(r)] is not None for r in neg])
                    curve.append((wrong, hit, bar))
                for limit in (0.0, 0.1):
                    wrong, hit, bar = max((c for c in curve if c[0] <= limit), key=lambda c: c[1])
                    print(
                        f"{label} fold {part} {name}: best target-as-card {hit:.3f} with negatives given a card <= {limit} (bar {bar:.2f})"
                    )


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/transcripts"),
        Path(sys.argv[2]) if len(sys.argv) > 2 else Path("../shared/eval"),
    )
