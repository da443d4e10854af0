"""Study: the full-card gate in small memories (LLM cards), where a new user starts.

The yardsticks index the whole corpus (163 sessions); the gate's keyword signal (BM25, IDF over the tenant's
own cards) grows with the pool, so a gate that leans on it can withhold full cards from a memory of a few dozen
sessions. Here each eval set's target sessions are sampled into memories of N sessions (a fixed seed per N),
only the queries whose target is in the memory are asked, and each gate file (the shipped data file's format)
is read in turn: targets given a full card, surfaced at all, and hand negatives given a full card.

    python scripts/studies/study_gate_small_memory.py ../shared/transcripts ../shared/eval \\
        --gate shipped=shared/episodic/data/full_card_gate.json --gate pseudo=/tmp/full_card_gate.pseudo.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path

SIZES = (8, 20, 50)
CORPUS = "entireio__cli/"  # the one-team corpus both eval sets were written from


def sampled_memory(transcripts: Path, files: list[str], n: int) -> tuple[Path, list[str]]:
    chosen = random.Random(n).sample(files, min(n, len(files)))
    folder = Path(tempfile.mkdtemp()) / CORPUS.rstrip("/")
    folder.mkdir()
    for name in chosen:
        (folder / Path(name).name).symlink_to(transcripts / name)
    return folder.parent, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    parser.add_argument("--gate", action="append", required=True, help="NAME=PATH of a gate file")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="memory sizes, comma-separated")
    args = parser.parse_args()
    os.environ.setdefault("EPISODIC_HOME", tempfile.mkdtemp())
    import episodic.core.full_card_gate as full_card_gate
    from episodic.evaluation.runner import run_evaluation
    from episodic.kernel.settings import load_settings

    gates = {
        name: full_card_gate.read_gates(Path(path).read_text(encoding="utf-8"))
        for name, path in (g.split("=", 1) for g in args.gate)
    }
    settings = load_settings(
        embedder="minilm", embedding_cache_dir=Path(tempfile.gettempdir()) / "gate-small-cache"
    )
    print("| set | sessions | queries | gate | targets as a full card | surfaced | hand negatives carded |")
    print("|---|---|---|---|---|---|---|")
    for name in ("dev", "fresh"):
        lines = (args.eval_dir / f"{name}-queries.jsonl").read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line) for line in lines if line.strip()]
        files = sorted({q["file"] for q in queries if q["file"].startswith(CORPUS)})
        for n in (int(s) for s in args.sizes.split(",")):
            memory, chosen = sampled_memory(args.transcripts, files, n)
            asked = Path(tempfile.mkdtemp()) / "queries.jsonl"
            kept = [q for q in queries if q["file"] in chosen]
            asked.write_text("".join(json.dumps(q) + "\n" for q in kept), encoding="utf-8")
            for gate_name, gate in gates.items():
                full_card_gate.shipped_gates = lambda gate=gate: gate  # type: ignore[assignment]
                result = run_evaluation(
                    settings,
                    [memory],
                    asked,
                    ["hybrid"],
                    cards_dir=args.eval_dir / "cards",
                    cards_only=True,
                    negatives=args.eval_dir / f"{name}-negatives.jsonl",
                )
                view = result.injection["cards"].overall
                print(
                    f"| {name} | {n} | {len(kept)} | {gate_name} | {view.target_as_card:.3f} | "
                    f"{view.target_surfaced:.3f} | {view.negatives_with_card:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
