"""Parse + scrub throughput (MB/s, one core) over a transcripts folder.

    python scripts/bench_parse.py [TRANSCRIPTS_DIR] [--repeat N]

Default folder: ../shared/transcripts beside the repository. MB counts every discovered session's bytes
(main + folded subagent files), including sessions that turn out not to be episodes.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from episodic.models import NotEpisode
from episodic.parse.claude_code import ClaudeCodeSource

REPO = Path(__file__).resolve().parents[1]


def _scrubber() -> object:
    try:
        from episodic.scrub import default_scrubber
    except ImportError:  # until the scrubber lands: measure parsing alone, and say so
        print("episodic.scrub not found: measuring parse only")

        class NoScrub:
            def scrub_counted(self, text: str) -> tuple[str, dict[str, int]]:
                return text, {}

        return NoScrub()
    return default_scrubber()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = ClaudeCodeSource(_scrubber(), roots=[])  # type: ignore[arg-type]
    started = time.perf_counter()
    sessions = list(source.discover([args.folder]))
    discover_s = time.perf_counter() - started
    total = sum(s.total_bytes for s in sessions)
    best = float("inf")
    outcomes: Counter[str] = Counter()
    for _ in range(args.repeat):
        outcomes.clear()
        started = time.process_time()
        for found in sessions:
            result = source.load(found)
            outcomes[result.reason if isinstance(result, NotEpisode) else "trajectory"] += 1
        best = min(best, time.process_time() - started)
    print(f"sessions: {len(sessions)} {dict(outcomes)}")
    print(f"discover: {discover_s * 1000:.0f} ms")
    print(
        f"parse+scrub: {total / 1e6:.1f} MB in {best:.2f} s CPU (best of {args.repeat}) = {total / 1e6 / best:.1f} MB/s"
    )


if __name__ == "__main__":
    main()
