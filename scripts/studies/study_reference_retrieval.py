"""Retrieval on reference cards: `episodic eval`'s systems with each session's card read from a folder.

    python scripts/studies/study_reference_retrieval.py --queries ../shared/eval/dev-queries.jsonl \
        [--transcripts DIR] [--cards DIR] [--systems hybrid,struct]

The same corpus, queries, embedder and systems as `episodic eval`; only the cards differ (a session
without a reference card has none, so card systems miss it). Prints recall@k overall / easy / hard per
system, the figure the heuristic's cards are compared with.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from episodic.evaluation.runner import run_evaluation
from episodic.kernel.errors import DistillError
from episodic.kernel.models import Card, DistillerInfo, DistillUsage, Trajectory
from episodic.kernel.ports import Distiller, DistillResult
from episodic.kernel.settings import load_settings

REPO = Path(__file__).resolve().parents[1]


class ReferenceCards(Distiller):
    """Returns the card stored for the session as `<cards>/<session id>.json`."""

    uses_survey = False

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.info = DistillerInfo(kind="reference", model=folder.name)

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        path = self.folder / f"{trajectory.session_id}.json"
        if not path.exists():
            raise DistillError(f"no reference card for session {trajectory.session_id}")
        started = time.perf_counter()
        card = Card.model_validate(json.loads(path.read_text()))
        return DistillResult(
            card=card, usage=DistillUsage(duration_ms=(time.perf_counter() - started) * 1000)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--transcripts", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--cards", default=str(REPO.parent / "shared" / "eval" / "cards"))
    parser.add_argument("--queries", required=True)
    parser.add_argument("--systems", default="hybrid,struct,semantic,reflect")
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    result = run_evaluation(
        load_settings(),
        [args.transcripts],
        Path(args.queries),
        args.systems.split(","),
        args.k,
        distiller=ReferenceCards(Path(args.cards)),
    )
    print(f"reference cards from {args.cards}, embedder {result.embedder}")
    for name, system in result.systems.items():
        split = {d: m.recall_at_k for d, m in system.by_difficulty.items()}
        print(f"{name:10} recall@{args.k} {system.metrics.recall_at_k:.3f}  "
              + "  ".join(f"{d} {v:.3f}" for d, v in sorted(split.items())))  # fmt: skip


if __name__ == "__main__":
    main()
