"""Parse + scrub + distill throughput (MB/s of transcript, one core) over a transcripts folder.

    python scripts/bench_parse.py [TRANSCRIPTS_DIR] [--repeat N]

Default folder: ../shared/transcripts beside the repository. MB counts every discovered session's bytes
(main + folded subagent files), including sessions that turn out not to be episodes. Times are process
CPU time (one core), best of N runs, so other load on the machine inflates them less. Every run
starts with the episodic modules' memo caches cleared, so a repeat never reuses the last run's work.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from episodic.distill.heuristic import HeuristicDistiller
from episodic.kernel.models import NotEpisode, Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import default_scrubber
from episodic.sessions.survey import render_survey

REPO = Path(__file__).resolve().parents[1]


def clear_caches() -> None:
    """Empty every functools cache in the episodic modules (each run is a cold pass)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("episodic.") and module is not None:
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                    value.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    distiller = HeuristicDistiller()
    started = time.perf_counter()
    sessions = list(source.discover([args.folder]))
    discover_s = time.perf_counter() - started
    total = sum(s.total_bytes for s in sessions)
    best_parse = best_all = float("inf")
    outcomes: Counter[str] = Counter()
    for _ in range(args.repeat):
        clear_caches()
        outcomes.clear()
        parse_s = distill_s = 0.0
        for found in sessions:
            started = time.process_time()
            result = source.load(found)
            parse_s += time.process_time() - started
            outcomes[result.reason if isinstance(result, NotEpisode) else "trajectory"] += 1
            if isinstance(result, Trajectory):
                started = time.process_time()
                survey = render_survey(result, 6000) if distiller.uses_survey else ""
                distiller.distill(result, survey)
                distill_s += time.process_time() - started
        best_parse = min(best_parse, parse_s)
        best_all = min(best_all, parse_s + distill_s)
    mb = total / 1e6
    print(f"sessions: {len(sessions)} {dict(outcomes)}")
    print(f"discover: {discover_s * 1000:.0f} ms")
    print(f"parse+scrub: {mb:.1f} MB in {best_parse:.2f} s CPU = {mb / best_parse:.1f} MB/s")
    label = "parse+scrub+survey+distill" if distiller.uses_survey else "parse+scrub+distill"
    print(f"{label}: {mb:.1f} MB in {best_all:.2f} s CPU = {mb / best_all:.1f} MB/s")


if __name__ == "__main__":
    main()
