"""CPU (user + sys) of one `episodic <command>` process, median of N, for this tree and optionally a baseline
tree run interleaved with it (what each command pays before doing any work).

    python scripts/bench_cli_startup.py --rounds 7 --baseline-tree /path/to/main/checkout

Each tree runs with its own `shared/` on PYTHONPATH and the same interpreter, from bytecode (a first untimed
run writes it: with PYTHONDONTWRITEBYTECODE a changed module is compiled again in every process); `index`
writes into a fresh EPISODIC_HOME per run, the read commands share one holding the demo corpus.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_SESSION = "09d756ab-2543-5ecc-9922-21e798e0bca3"  # a card of the bundled demo corpus
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "stats": ["stats"],
    "show": ["show", DEMO_SESSION],
    "history timeline": ["history", "timeline"],
    "setup claude-code (print only)": ["setup", "claude-code"],
    "search": ["search", "npm run check passes locally but CI fails with lint errors"],
    "index (demo corpus, fresh home)": ["index", "{tree}/shared/episodic/demo"],
}


def cpu_of(tree: Path, args: list[str], home: Path) -> float:
    """Seconds of CPU the process (and its children) used."""
    env = {**os.environ, "PYTHONPATH": str(tree / "shared"), "EPISODIC_HOME": str(home)}
    env.pop("EPISODIC_CONFIG", None)
    env.pop(
        "PYTHONDONTWRITEBYTECODE", None
    )  # both trees read their modules from bytecode, as an install does
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "episodic", *(a.format(tree=tree) for a in args)]
    run = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {tree}: {run.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline-tree", type=Path, default=None, help="A checkout to compare with.")
    parser.add_argument("--only", action="append", default=None, help="Only these commands (repeatable).")
    args = parser.parse_args()
    trees = {"this": ROOT, **({"baseline": args.baseline_tree.resolve()} if args.baseline_tree else {})}
    with tempfile.TemporaryDirectory() as shared_home:
        home = Path(shared_home)
        cpu_of(ROOT, ["index", "{tree}/shared/episodic/demo"], home)
        for tree in trees.values():  # a first run writes each tree's bytecode (not timed)
            for command in COMMANDS.values():
                with tempfile.TemporaryDirectory() as fresh:
                    cpu_of(tree, command, Path(fresh) if command[0] == "index" else home)
        print(f"load average {os.getloadavg()[0]:.2f}; median of {args.rounds} (all runs in brackets)")
        for name, command in COMMANDS.items():
            if args.only and name.split()[0] not in args.only:
                continue
            runs: dict[str, list[float]] = {label: [] for label in trees}
            for _ in range(args.rounds):
                for label, tree in trees.items():  # interleaved: both trees see the same load
                    if name.startswith("index"):
                        with tempfile.TemporaryDirectory() as fresh:
                            runs[label].append(cpu_of(tree, command, Path(fresh)))
                    else:
                        runs[label].append(cpu_of(tree, command, home))
            cells = [
                f"{label} {statistics.median(v):.2f} s [{' '.join(f'{x:.2f}' for x in v)}]"
                for label, v in runs.items()
            ]
            print(f"{name}: " + "; ".join(cells))
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
