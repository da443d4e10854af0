"""How close the offline heuristic's cards come to reference cards (e.g. LLM-written ones).

    python scripts/studies/study_card_quality.py [--transcripts DIR] [--cards DIR] [--json] [--disagreements]

Per field: the cosine similarity (project embedder, cached in $EPISODIC_HOME/cache) of the heuristic
field to the reference field, over sessions where both are filled, and how often the heuristic fills a
field the reference filled. Outcome: the confusion matrix against the reference labels, with `verified`
precision and recall. Chatter: the share of statement fields (problem, insight, decisions, dead ends,
misleading intuitions) that break a chatter rule of `episodic.distill.checks` (first-person talk,
"Perfect!", questions, to-dos, truncated sentences), for the heuristic and for the reference.
Defaults: ../shared/transcripts and ../shared/eval/cards beside the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from episodic.distill.checks import chatter_breaks
from episodic.distill.heuristic import HeuristicDistiller
from episodic.evaluation.runner import default_embedder
from episodic.kernel.models import Card, Trajectory
from episodic.kernel.settings import load_settings
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import default_scrubber

REPO = Path(__file__).resolve().parents[1]
FIELDS = ("problem", "steps", "key_decisions", "insight", "dead_ends", "misleading_intuitions",
          "critical_checks", "tags")  # fmt: skip
STATEMENT_FIELDS = ("problem", "insight", "key_decisions", "dead_ends", "misleading_intuitions")
OUTCOMES = ("verified", "unverified", "failed", "informational")


def field_text(card: Card, name: str) -> str:
    value = getattr(card, name)
    return "; ".join(value) if isinstance(value, list) else str(value)


def statements(card: Card, name: str) -> list[str]:
    value = getattr(card, name)
    return [v for v in (value if isinstance(value, list) else [value]) if v]


def load_pairs(transcripts: Path, cards: Path) -> tuple[dict[str, Trajectory], dict[str, Card]]:
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    trajectories: dict[str, Trajectory] = {}
    for found in source.discover([str(transcripts)]):
        loaded = source.load(found)
        if isinstance(loaded, Trajectory) and (cards / f"{loaded.session_id}.json").exists():
            trajectories[loaded.session_id] = loaded
    references = {
        sid: Card.model_validate(json.loads((cards / f"{sid}.json").read_text())) for sid in trajectories
    }
    return trajectories, references


def similarities(heuristic: dict[str, Card], reference: dict[str, Card]) -> dict[str, dict[str, float]]:
    """Per field: mean cosine where both are filled, and the share of reference-filled fields filled."""
    embedder = default_embedder(load_settings())
    out: dict[str, dict[str, float]] = {}
    for name in FIELDS:
        pairs = [(field_text(heuristic[s], name), field_text(reference[s], name)) for s in reference]
        both = [(h, r) for h, r in pairs if h and r]
        filled_ref = sum(1 for _, r in pairs if r)
        cosine = 0.0
        if both:
            left = embedder.embed([h for h, _ in both])
            right = embedder.embed([r for _, r in both])
            cosine = float(np.mean(np.sum(left * right, axis=1)))
        out[name] = {
            "cosine": round(cosine, 3),
            "pairs": len(both),
            "filled": round(len(both) / filled_ref, 3) if filled_ref else 0.0,
            "heuristic_filled": sum(1 for h, _ in pairs if h),
            "reference_filled": filled_ref,
        }
    return out


def confusion(heuristic: dict[str, Card], reference: dict[str, Card]) -> dict[str, object]:
    matrix: Counter[tuple[str, str]] = Counter(
        (heuristic[s].outcome.value, reference[s].outcome.value) for s in reference
    )
    said = sum(v for (h, _), v in matrix.items() if h == "verified")
    truly = sum(v for (_, r), v in matrix.items() if r == "verified")
    both = matrix[("verified", "verified")]
    return {
        "matrix": {h: {r: matrix[(h, r)] for r in OUTCOMES} for h in OUTCOMES},
        "verified_precision": round(both / said, 3) if said else 0.0,
        "verified_recall": round(both / truly, 3) if truly else 0.0,
        "agreement": round(sum(matrix[(o, o)] for o in OUTCOMES) / max(len(reference), 1), 3),
        "poisoning": sorted(
            s
            for s in reference
            if heuristic[s].outcome.value == "verified" and reference[s].outcome.value != "verified"
        ),
    }


def chatter_share(cards: dict[str, Card]) -> dict[str, float]:
    """Share of statements breaking a chatter rule, per statement field and over all of them."""
    out: dict[str, float] = {}
    total = noisy = 0
    for name in STATEMENT_FIELDS:
        items = [text for card in cards.values() for text in statements(card, name)]
        bad = sum(1 for text in items if chatter_breaks(text))
        out[name] = round(bad / len(items), 3) if items else 0.0
        total, noisy = total + len(items), noisy + bad
    out["all"] = round(noisy / total, 3) if total else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--transcripts", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--cards", default=str(REPO.parent / "shared" / "eval" / "cards"))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--disagreements", action="store_true", help="list verified-vs-not sessions")
    args = parser.parse_args()
    trajectories, reference = load_pairs(Path(args.transcripts), Path(args.cards))
    if not reference:
        sys.exit(f"no session of {args.transcripts} has a reference card in {args.cards}")
    distiller = HeuristicDistiller()
    heuristic = {sid: distiller.distill(t, "").card for sid, t in trajectories.items()}
    result = {
        "distiller": distiller.info.id,
        "sessions": len(reference),
        "fields": similarities(heuristic, reference),
        "outcome": confusion(heuristic, reference),
        "chatter": {"heuristic": chatter_share(heuristic), "reference": chatter_share(reference)},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['distiller']} vs reference over {len(reference)} sessions")
    print("field                  cosine  filled  (heuristic/reference non-empty)")
    for name, row in result["fields"].items():  # type: ignore[attr-defined]
        print(f"{name:22} {row['cosine']:6.3f}  {row['filled']:6.3f}  "
              f"({row['heuristic_filled']}/{row['reference_filled']})")  # fmt: skip
    outcome = result["outcome"]
    print("outcome (rows heuristic, columns reference):", *OUTCOMES)
    for h, row in outcome["matrix"].items():  # type: ignore[index]
        print(f"  {h:14}", *(f"{row[r]:4}" for r in OUTCOMES))
    print(f"verified precision {outcome['verified_precision']}, recall {outcome['verified_recall']}, "  # type: ignore[index]
          f"agreement {outcome['agreement']}")  # type: ignore[index]  # fmt: skip
    print("chatter share (heuristic / reference):")
    for name in (*STATEMENT_FIELDS, "all"):
        print(f"  {name:22} {result['chatter']['heuristic'][name]:.3f} / "  # type: ignore[index]
              f"{result['chatter']['reference'][name]:.3f}")  # type: ignore[index]  # fmt: skip
    if args.disagreements:
        for sid in outcome["poisoning"]:  # type: ignore[index]
            path = trajectories[sid].source.main_path
            print(f"heuristic verified, reference {reference[sid].outcome.value}: {sid} {path}")


if __name__ == "__main__":
    main()
