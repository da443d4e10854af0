"""Survey sizes (estimated tokens) over a transcripts folder, at a budget and unbounded.

python scripts/survey_sizes.py [TRANSCRIPTS_DIR] [--budget 6000]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from episodic.kernel.models import Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import default_scrubber
from episodic.sessions.survey import estimate_tokens, render_survey

REPO = Path(__file__).resolve().parents[1]


def _pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--budget", type=int, default=6000)
    args = parser.parse_args()
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    budgeted: list[int] = []
    unbounded: list[int] = []
    for found in source.discover([args.folder]):
        traj = source.load(found)
        if isinstance(traj, Trajectory):
            budgeted.append(estimate_tokens(render_survey(traj, args.budget)))
            unbounded.append(estimate_tokens(render_survey(traj, None)))
    if not budgeted:
        raise SystemExit(f"no session transcript found under {args.folder}")
    print(f"trajectories: {len(budgeted)}")
    for name, values in ((f"budget {args.budget}", budgeted), ("unbounded", unbounded)):
        print(
            f"{name}: median {statistics.median(values):.0f}  p95 {_pct(values, 0.95)}  max {max(values)} tokens"
        )


if __name__ == "__main__":
    main()
