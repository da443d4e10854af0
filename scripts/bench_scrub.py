"""Scrubber throughput on one core: MB/s over the raw text of every shared transcript, over text-heavy
synthetic data, and per string value (the way the parser calls it), plus redactions per kind.

    python scripts/bench_scrub.py [--transcripts ../shared/transcripts] [--repeat 3] [--synthetic-mb 32] [--fallback]
    python scripts/bench_scrub.py --repeat 3 --against main=/path/to/main/shared [--against old=…]   # interleaved

`--against LABEL=DIR` (a package folder holding another `episodic`, e.g. `git archive <commit> shared | tar -x`)
runs this tree's scrubber and each other one in turn, one process per pass round, round after round, so that a
machine whose load changes meanwhile weighs on all of them alike; each figure is the best of its rounds.

Times are CPU seconds of this process (`time.process_time`), so other work on the machine does not
count against us. Each run scrubs fresh `str` objects (decoded again from bytes, not timed): CPython
caches a string's UTF-8 form after the first search, and a cached run would flatter the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from episodic.scrub import Scrubber

REPO_ROOT = Path(__file__).resolve().parents[1]


def synthetic_text(size: int, seed: int = 7) -> bytes:
    """Prose, code and JSON-escaped tool output with a secret every ~20 KB."""
    rng = random.Random(seed)
    # about one secret-ish word (token, password) in 25: denser than real transcripts (one trigger per ~3 KB)
    prose = (
        "the test fails because the refresh runs before the config is loaded so we read the value from "
        "env and retry with a new session then check output again after the build step finished with an "
        "error in the handler module where the cache was stale and the worker restarted twice while "
        "the migration script waited on the lock file until the timeout expired token password"
    )
    words = prose.split(" ")
    code = [
        "def load(path: str) -> dict[str, str]:",
        "    with open(path) as fh:",
        '        return json.load(fh)["settings"]',
        "max_tokens = 4096  # token budget",
        'if err != nil { return fmt.Errorf(\\"open %s: %w\\", path, err) }',
        '{\\"type\\":\\"tool_result\\",\\"content\\":\\"ok\\\\n3 passed\\"}',
    ]
    secrets = [
        "AWS_SECRET_ACCESS_KEY=" + "".join(rng.choices(string.ascii_letters + string.digits + "/+", k=40)),
        "Authorization: Bearer " + "".join(rng.choices(string.ascii_letters + string.digits, k=32)),
        "postgres://app:" + "".join(rng.choices(string.ascii_letters, k=12)) + "@db/app",
    ]
    out: list[str] = []
    total = 0
    while total < size:
        if rng.random() < 0.002:
            piece = rng.choice(secrets)
        elif rng.random() < 0.3:
            piece = rng.choice(code)
        else:
            piece = " ".join(rng.choices(words, k=rng.randint(5, 25))) + "."
        out.append(piece)
        total += len(piece) + 1
    return "\n".join(out).encode()


def string_values(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from string_values(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from string_values(value)


def measure(
    label: str, blobs: list[bytes], run: Callable[[list[str]], Counter[str]], repeat: int
) -> Counter[str]:
    size = sum(len(b) for b in blobs)
    best = float("inf")
    counts: Counter[str] = Counter()
    for _ in range(repeat):
        texts = [b.decode("utf-8", errors="surrogateescape") for b in blobs]  # fresh objects, untimed
        start = time.process_time()
        counts = run(texts)
        best = min(best, time.process_time() - start)
    print(f"{label:48} {size / 1e6:8.1f} MB  {best:6.2f} s  {size / 1e6 / best:7.1f} MB/s")
    RESULTS[label.split(" (")[0]] = size / 1e6 / best
    return counts


RESULTS: dict[str, float | str] = {}  # pass -> MB/s (and the engine), for --json


def _shown(value: float | str) -> str:
    return f"{value:.1f}" if isinstance(value, float) else value


def interleaved(args: argparse.Namespace) -> None:
    """This tree and each `--against` tree, one child process per (round, tree), the trees' turns interleaved."""
    trees = [("this tree", str(REPO_ROOT / "shared")), *(tuple(a.split("=", 1)) for a in args.against)]
    best: dict[str, dict[str, float]] = {label: {} for label, _ in trees}
    for round_number in range(args.repeat):
        for label, path in trees:
            extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and "shared" not in p]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, *extra])}
            child = [
                sys.executable,
                __file__,
                "--repeat",
                "1",
                "--json",
                "--transcripts",
                str(args.transcripts),
            ]
            child += ["--synthetic-mb", str(args.synthetic_mb)] + (["--fallback"] if args.fallback else [])
            done = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"round {round_number + 1} {label:12} "
                + "  ".join(f"{k}: {_shown(v)}" for k, v in figures.items())
            )
            for name, value in figures.items():
                if isinstance(value, float):
                    best[label][name] = max(best[label].get(name, 0.0), value)
    print("best of each (MB/s):")
    for label, figures in best.items():
        print(f"  {label:12} " + "  ".join(f"{k}: {v:.1f}" for k, v in figures.items()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transcripts", type=Path, default=REPO_ROOT.parent / "shared" / "transcripts")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fallback", action="store_true", help="force the pure-Python trigger search")
    parser.add_argument("--synthetic-mb", type=int, default=32, help="size of the synthetic text, in 8 parts")
    parser.add_argument("--against", action="append", default=[], metavar="LABEL=DIR", help="interleave with")
    parser.add_argument("--json", action="store_true", help="print the MB/s per pass as one JSON line last")
    args = parser.parse_args()
    if args.against:
        interleaved(args)
        return

    scrubber = Scrubber(accelerated=not args.fallback)
    engine = getattr(scrubber, "engine", "ahocorasick" if scrubber.accelerated else "python")
    RESULTS["engine"] = engine
    print(f"trigger search: {engine}")

    def scrub_all(texts: list[str]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(scrubber.scrub_counted(text)[1])
        return counts

    files = sorted(args.transcripts.rglob("*.jsonl")) if args.transcripts.is_dir() else []
    if files:
        raw = [path.read_bytes() for path in files]
        counts = measure(f"raw transcript text ({len(files)} files)", raw, scrub_all, args.repeat)
        print(f"  redactions per kind: {dict(sorted(counts.items()))}")
        values: list[bytes] = []
        for blob in raw:
            for line in blob.splitlines():
                try:
                    values.extend(v.encode("utf-8", "surrogatepass") for v in string_values(json.loads(line)))
                except ValueError:
                    continue
        measure(f"string values of parsed lines ({len(values)})", values, scrub_all, args.repeat)
    else:
        print(f"no transcripts at {args.transcripts}: skipping the real-text runs")

    synthetic = [synthetic_text(args.synthetic_mb * 125_000, seed) for seed in range(8)]
    counts = measure("synthetic text-heavy (prose, code, escaped JSON)", synthetic, scrub_all, args.repeat)
    print(f"  redactions per kind: {dict(sorted(counts.items()))}")
    if args.json:
        print(json.dumps(RESULTS))


if __name__ == "__main__":
    main()
