"""Study: many more random pairs than `tests/adversarial/test_scrub_pairs.py` draws, through
its own `_survivors` (plain, JSON-escaped, inside a JSON object): any two items of its pool with any separator
and prose. Prints the failures found per round (none is the answer wanted); a failure found here is pinned in
the test as an `@example`.

    python scripts/studies/study_scrub_pairs_sweep.py --rounds 20 --pairs 30000
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
sys.path[:0] = [str(TESTS / "adversarial"), str(TESTS)]

from kits.secret_shapes import SEPARATORS  # noqa: E402
from test_scrub_pairs import _items, _survivors  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=30_000)
    args = parser.parse_args()
    items = _items()
    total = 0
    for round_no in range(1, args.rounds + 1):
        rng = random.Random(round_no * 7919)
        failures = []
        for _ in range(args.pairs):
            first, second = rng.choice(items), rng.choice(items)
            separator, prose = rng.choice(SEPARATORS), rng.choice(["", "see ", "the values: "])
            left = _survivors(prose + first[0] + separator + second[0], first[1] + second[1])
            if left:
                failures.append((first[0][:40], second[0][:60], separator, prose, [s[:20] for s in left]))
        total += len(failures)
        print(f"round {round_no}: {len(failures)} of {args.pairs} pairs left a secret", flush=True)
        for failure in failures[:3]:
            print("   ", failure)
    print(f"{args.rounds * args.pairs} pairs, {total} left a secret")


if __name__ == "__main__":
    main()
