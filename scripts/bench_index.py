"""Cold `episodic index` of a folder: wall and CPU time, sessions/s, and where the time goes.

    python scripts/bench_index.py [FOLDER] [--rounds 3] [--baseline-tree DIR] [--json]

Each run indexes FOLDER into a fresh temporary home (no store, no cache: a first index) in a subprocess
that imports `episodic` from a tree's `shared/` (this repository's, and with --baseline-tree another
checkout's, e.g. `git worktree add /tmp/base main`). With a baseline the two trees alternate, round by
round (new, old, old, new, ...), so the machine's drifting speed hits both alike; the load average is
reported beside every run. CPU time counts the run's worker processes too.

Stage shares are the wall time spent inside each stage's calls (parse+scrub = source.load, distill,
embed = embedder.embed, store = store.upsert), in whichever thread makes them, over the run's wall
time; they can sum past 100 % where stages overlap (the pipelined index embeds while it parses).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STAGES = (("parse", "source", "load"), ("distill", "distiller", "distill"), ("embed", "embedder", "embed"))


def _timed(totals: dict[str, float], stage: str, lock: threading.Lock, fn: Callable[..., Any]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with lock:
                totals[stage] += time.perf_counter() - start

    return wrapper


def child(folder: str) -> None:
    """One cold index in this process (the tree under test is on PYTHONPATH); prints one JSON line."""
    try:
        from episodic.assembly import build_memory
    except ImportError:  # a baseline tree from before the assembly package (its composition root)
        from episodic.backends import build_memory  # type: ignore[no-redef]
    from episodic.cli.core_cmds import run_index
    from episodic.kernel.settings import load_settings

    started = time.perf_counter()
    settings = load_settings()
    memory = build_memory(settings)
    totals = dict.fromkeys(["parse", "distill", "embed", "store"], 0.0)
    lock = threading.Lock()
    first_stored: list[float] = []
    for stage, owner, method in STAGES:
        target = getattr(memory, owner)
        setattr(target, method, _timed(totals, stage, lock, getattr(target, method)))
    upsert = memory.store.upsert

    def stored(*args: Any, **kwargs: Any) -> Any:
        result = upsert(*args, **kwargs)
        if not first_stored:
            first_stored.append(time.perf_counter() - started)
        return result

    memory.store.upsert = _timed(totals, "store", lock, stored)  # type: ignore[method-assign]
    report = run_index(settings, [folder], settings.tenant, as_json=True, memory=memory)
    close = getattr(memory.embedder, "close", None)
    if close:
        close()  # joins worker processes, so their CPU time is counted
    wall = time.perf_counter() - started
    print(
        json.dumps(
            {
                "wall_in_process": wall,
                "stages": totals,
                "first_card_s": first_stored[0] if first_stored else None,
                "found": report.found,
                "indexed": report.indexed,
                "failed": len(report.failed),
            }
        )
    )


def run_once(tree: Path, folder: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-index-") as home:
        env = {
            **os.environ,
            "PYTHONPATH": str(tree / "shared"),
            "HOME": home,
            "EPISODIC_HOME": str(Path(home) / ".episodic"),
        }
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", folder],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"index run in {tree} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["load1"] = load
    result["sessions_per_s"] = result["indexed"] / wall if wall else 0.0
    return result


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["wall"] for r in runs]
    return {
        "wall_median": statistics.median(walls),
        "wall_min": min(walls),
        "cpu_median": statistics.median(r["cpu"] for r in runs),
        "sessions_per_s": statistics.median(r["sessions_per_s"] for r in runs),
        "first_card_s": statistics.median(r["first_card_s"] or 0.0 for r in runs),
        "stage_share": {
            s: statistics.median(r["stages"][s] / r["wall_in_process"] for r in runs)
            for s in runs[0]["stages"]
        },
        "indexed": runs[0]["indexed"],
    }


def line(name: str, run: dict[str, Any]) -> str:
    shares = " ".join(f"{s} {v / run['wall_in_process']:4.0%}" for s, v in run["stages"].items())
    return (
        f"  {name:8} wall {run['wall']:6.1f}s  cpu {run['cpu']:6.1f}s  {run['sessions_per_s']:5.2f} sessions/s  "
        f"first card {run['first_card_s'] or 0:5.1f}s  load {run['load1']:4.2f}  [{shares}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=REPO, help="the tree under test (default: this one)")
    parser.add_argument("--baseline-tree", type=Path, help="a checkout of the starting code, run interleaved")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.folder)
        return
    trees = {"new": args.tree.resolve()}
    if args.baseline_tree:
        trees["baseline"] = args.baseline_tree.resolve()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    order = list(trees)
    for round_no in range(args.rounds):
        if not args.json:
            print(f"round {round_no + 1}/{args.rounds}", flush=True)
        for name in order if round_no % 2 == 0 else order[::-1]:  # ABBA: neither side always goes first
            run = run_once(trees[name], args.folder)
            runs[name].append(run)
            if not args.json:
                print(line(name, run), flush=True)
    summary = {name: summarise(r) for name, r in runs.items()}
    if "baseline" in summary:
        ratios = [n["wall"] / b["wall"] for n, b in zip(runs["new"], runs["baseline"], strict=True)]
        summary["ratio_wall_median"] = statistics.median(ratios)
        summary["ratio_per_round"] = ratios
    if args.json:
        print(json.dumps({"summary": summary, "runs": runs}, indent=2))
        return
    for name in trees:
        s = summary[name]
        shares = " ".join(f"{k} {v:.0%}" for k, v in s["stage_share"].items())
        print(
            f"{name}: median wall {s['wall_median']:.1f}s (min {s['wall_min']:.1f}s), cpu {s['cpu_median']:.1f}s, "
            f"{s['sessions_per_s']:.2f} sessions/s, first card {s['first_card_s']:.1f}s, {s['indexed']} indexed; "
            f"{shares}"
        )
    if "baseline" in summary:
        per_round = ", ".join(f"{r:.2f}" for r in summary["ratio_per_round"])
        print(f"new/baseline wall: median {summary['ratio_wall_median']:.2f} (rounds: {per_round})")


if __name__ == "__main__":
    main()
