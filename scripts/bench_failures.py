"""Benchmark recall at the moment of failure on real sessions, offline.

    python scripts/bench_failures.py [TRANSCRIPTS_DIR] [--hook-n 40] [--chart bench_failures.png] [--json]

Replays every failing tool call of the transcripts in time order (sessions by start time) against a
failure memory built only from the sessions before it (`recall_failure`'s own `lookup`, in process).
A positive is a failure one of whose error lines appeared in an earlier session as the error of a call that a
later passing run of the same check got past; every other failure is a negative. "The same error line" and
"the same check" are the benchmark's own (`truth_lines`, `truth_checks`: a plainer normalisation than the
hook's), so an entry the hook's signatures find is checked against an independent notion. An entry is correct when the session it points to is such a session.
The thresholds (`failure_min_words`, `failure_same_check`) are chosen on the sessions whose id hashes even
(calibration) and reported on the others (held out). With --hook-n, the hook itself (a subprocess, as Claude
Code runs it) against a warm in-process server over the whole memory: latency per call.
Targets: precision >= 0.8, negatives with an entry <= 5 %, hook p95 <= 150 ms warm.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from episodic.distill.evidence import call_passed, exited_ok, shell_command
from episodic.failures.service import FailureMemory, lookup, remember_fixes, render_fix
from episodic.failures.sqlite_store import SQLiteFailureStore
from episodic.kernel.models import ToolCall, Trajectory
from episodic.kernel.settings import Settings, load_settings
from episodic.parse.agents import AllAgentsSource
from episodic.plumbing import envsource
from episodic.plumbing.marker import wrap_injected
from episodic.scrub import Scrubber, default_scrubber

REPO = Path(__file__).resolve().parents[1]
TENANT = "bench"
# a one-word line (`Killed`) names no error of its own: the grid starts at two (`undefined: regexp`)
GRID = [(words, same) for words in (2, 3, 4, 5, 6, 8) for same in (True, False)]
TARGET_PRECISION, TARGET_NEGATIVE_RATE, TARGET_P95_MS = 0.8, 0.05, 150.0


def load_sessions(folder: Path, settings: Settings, scrubber: Scrubber) -> list[Trajectory]:
    source = AllAgentsSource.from_settings(settings, scrubber, scan_home=False)
    loaded = [source.load(s) for s in source.discover([str(folder)])]
    sessions = [t for t in loaded if isinstance(t, Trajectory)]
    epoch = datetime.fromtimestamp(0, UTC)

    def start(t: Trajectory) -> datetime:
        stamp = t.started_at or t.ended_at or epoch
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)

    return sorted(sessions, key=lambda t: (start(t), t.session_id))


def held_out(session_id: str) -> bool:
    """Half the sessions by hash: odd → reported (held out), even → calibration."""
    return hashlib.sha256(session_id.encode()).digest()[0] % 2 == 1


def failing(call: ToolCall) -> bool:
    """What reaches PostToolUseFailure: a tool result flagged as an error (a shell's non-zero exit)."""
    return not call.rejected and not call.interrupted and not exited_ok(call)


# the benchmark's own notion of "the same error", independent of `episodic.failures.signature`: any output
# line naming an error, lower case, paths, numbers and punctuation dropped, at least three words
_GT_ERROR = re.compile(
    r"(?i:error|fail|fatal|cannot|can't|undefined|not found|denied|exception|panic|invalid|missing)"
    r"|^\S+:\d+(?::\d+)?: "  # a compiler's or a linter's finding: file:line[:col]: message
)
# a runner's "something failed" line or a program's own log line names no error of its own
_GT_WRAPPER = re.compile(
    r"(?i:task failed|\[(?:build|setup) failed\]|exit (?:code|status)|^\s*warning\b)|(?:^|\s)(?:INFO|WARN|DEBUG)\s"
)
_GT_PATH = re.compile(r"\S*[/\\]\S*")
_GT_NOISE = re.compile(r"[^a-z_ ]+")


def truth_lines(output: str) -> set[str]:
    lines = set()
    for line in output[:8000].replace("\\n", "\n").splitlines():
        if line.startswith("Exit code") or not _GT_ERROR.search(line) or _GT_WRAPPER.search(line):
            continue
        line = re.sub(r"^\s*\[[\w:.-]+\]\s*", "", line)  # a task runner's prefix (`[lint:go] `)
        words = " ".join(_GT_NOISE.sub(" ", _GT_PATH.sub(" ", line.lower())).split())
        if len(words.split()) >= 3:
            lines.add(words)
    return lines


def truth_checks(command: str) -> set[str]:
    """Every check a shell line runs, as program and first argument (`go test`; `mise run lint`: through a
    runner), pipes' tails and `cd`/`export`/`echo` left out: `mise run fmt && mise run lint` runs two."""
    checks = set()
    for segment in re.split(r"&&|\|\||;|\n", command):
        words = [
            w for w in segment.split("|")[0].split() if not re.match(r"^\w+=", w) and not w.startswith("-")
        ]
        if words and words[0] not in ("cd", "export", "source", "set", "echo", "sleep"):
            checks.add(" ".join(words[:3] if words[1:2] in (["run"], ["exec"]) else words[:2]))
    return checks


Resolved = list[
    tuple[set[str], set[str]]
]  # (the checks of a failed call, its error lines) a later pass got past


def got_past(session: Trajectory) -> Resolved:
    """The session's failures that a later passing run sharing one of their checks got past."""
    resolved: Resolved = []
    calls = [c for c in session.tool_calls if shell_command(c) and not c.rejected]
    for i, call in enumerate(calls):
        if call_passed(call):
            continue
        checks = truth_checks(shell_command(call))
        if checks and any(checks & truth_checks(shell_command(c)) and call_passed(c) for c in calls[i + 1 :]):
            resolved.append((checks, truth_lines(call.output)))
    return resolved


@dataclass
class Failure:
    session_id: str
    held_out: bool
    shell: bool
    positive: bool
    entry_chars: int = 0
    correct: bool = False
    latency_ms: float = 0.0


@dataclass
class Replay:
    failures: list[Failure] = field(default_factory=list)


def replay(sessions: list[Trajectory], settings: Settings, scrubber: Scrubber, folder: Path) -> Replay:
    store = SQLiteFailureStore(
        folder / f"failures-{settings.failure_min_words}-{settings.failure_same_check}.db"
    )
    memory = FailureMemory(settings, store, scrubber)
    earlier: dict[str, Resolved] = {}
    result = Replay()
    for session in sessions:
        for call in session.tool_calls:
            if not failing(call):
                continue
            command = shell_command(call)
            checks = truth_checks(command) if command else set()
            lines = truth_lines(call.output)
            witnesses = {
                sid for sid, resolved in earlier.items() if any(checks & c and lines & e for c, e in resolved)
            }
            started = time.perf_counter()
            found = lookup(memory, TENANT, command or call.name, call.output, session_id=session.session_id)
            elapsed = (time.perf_counter() - started) * 1000
            failure = Failure(
                session.session_id,
                held_out(session.session_id),
                bool(command),
                bool(witnesses),
                latency_ms=elapsed,
            )
            if found.fix is not None:
                failure.entry_chars = len(wrap_injected(render_fix(found.fix)))
                failure.correct = found.fix.session_id in witnesses
            result.failures.append(failure)
        remember_fixes(memory, TENANT, session)
        earlier[session.session_id] = got_past(session)
    store.close()
    return result


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_hook(
    payload: dict[str, object], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """The failure hook as an agent CLI starts it (one process, the payload on stdin): its result, wall ms
    and the process's own CPU ms (what load does not inflate)."""
    cpu_before, started = _child_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "episodic.hooks.failure"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return done, (time.perf_counter() - started) * 1000, (_child_cpu() - cpu_before) * 1000


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def metrics(failures: list[Failure]) -> dict[str, float | int]:
    positives = [f for f in failures if f.positive]
    negatives = [f for f in failures if not f.positive]
    entries = [f for f in failures if f.entry_chars]
    latencies = [f.latency_ms for f in failures]
    return {
        "failures": len(failures),
        "shell_failures": sum(f.shell for f in failures),
        "positives": len(positives),
        "negatives": len(negatives),
        "entries": len(entries),
        "positives_with_entry": sum(1 for f in positives if f.entry_chars),
        "positives_served": round(sum(1 for f in positives if f.correct) / len(positives), 3)
        if positives
        else 0.0,
        "precision": round(sum(f.correct for f in entries) / len(entries), 3) if entries else 1.0,
        "negatives_with_entry": sum(1 for f in negatives if f.entry_chars),
        "negative_entry_rate": round(sum(1 for f in negatives if f.entry_chars) / len(negatives), 4)
        if negatives
        else 0.0,
        "chars_per_failure": round(sum(f.entry_chars for f in failures) / len(failures), 1)
        if failures
        else 0.0,
        "chars_per_entry": round(statistics.fmean(f.entry_chars for f in entries), 1) if entries else 0.0,
        "lookup_p50_ms": round(_pct(latencies, 0.5), 2),
        "lookup_p95_ms": round(_pct(latencies, 0.95), 2),
    }


def choose(calibration: dict[tuple[int, bool], dict[str, float | int]]) -> tuple[int, bool]:
    """Most positives served within the targets on the calibration half, then the fewest negatives with an
    entry, then the fewest words (equal on this half: the one that serves more unseen errors), the same
    check before any check."""
    within = [
        config
        for config, m in calibration.items()
        if m["precision"] >= TARGET_PRECISION and m["negative_entry_rate"] <= TARGET_NEGATIVE_RATE
    ]
    pool = within or list(calibration)
    return max(
        pool,
        key=lambda c: (
            calibration[c]["positives_served"],
            -calibration[c]["negatives_with_entry"],
            -c[0],
            c[1],
        ),
    )


def hook_latency(
    sessions: list[Trajectory], settings: Settings, scrubber: Scrubber, n: int, tmp: Path
) -> dict[str, float]:
    """The hook as Claude Code runs it (one subprocess per failure) against a warm in-process server."""
    from episodic.assembly import build_memory
    from episodic.failures.service import failures_of
    from episodic.kernel.auth import LocalTokenStore
    from episodic.mcp.http_server import BackgroundServer, build_endpoint

    home = tmp / "hook-home"
    served = load_settings(
        home=home,
        embedder="hashing",
        failure_min_words=settings.failure_min_words,
        failure_same_check=settings.failure_same_check,
    )
    memory = build_memory(served)
    failures = failures_of(memory)
    assert failures is not None
    for session in sessions:
        remember_fixes(failures, TENANT, session)
    calls = [(s, c) for s in sessions for c in s.tool_calls if failing(c) and shell_command(c)]
    if not calls:
        raise SystemExit("no failing shell command in these sessions to time the hook with")
    token = LocalTokenStore(served.tokens_path).add(TENANT)
    env = {
        "PATH": envsource.environ().get("PATH", ""),
        "HOME": str(tmp),
        "EPISODIC_HOME": str(tmp / "client-home"),
        "EPISODIC_TOKEN": token,
        "EPISODIC_HOOK_AUTOSTART": "false",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    times: list[float] = []
    cpus: list[float] = []  # the hook process's own CPU time: what load does not inflate
    injected = 0
    with BackgroundServer(build_endpoint(served, memory)) as server:
        env["EPISODIC_URL"] = server.url
        for i in range(n + 3):
            session, call = calls[(i * 7) % len(calls)]
            payload = {
                "hook_event_name": "PostToolUseFailure",
                "session_id": f"bench-{i}",  # not the session itself: its own fix may answer
                "cwd": str(tmp),
                "tool_name": "Bash",
                "tool_input": {"command": shell_command(call)},
                "error": call.output,
                "is_interrupt": False,
            }
            done, elapsed, cpu = run_hook(payload, env)
            if done.returncode != 0:
                raise SystemExit(f"the hook exited {done.returncode}: {done.stderr}")
            if i >= 3:  # the first calls warm the server
                times.append(elapsed)
                cpus.append(cpu)
                injected += bool(done.stdout)
    return {
        "n": len(times),
        "p50_ms": round(_pct(times, 0.5), 1),
        "p95_ms": round(_pct(times, 0.95), 1),
        "mean_ms": round(statistics.fmean(times), 1),
        "cpu_p50_ms": round(_pct(cpus, 0.5), 1),
        "cpu_p95_ms": round(_pct(cpus, 0.95), 1),
        "injected": injected,
    }


def chart(report: dict[str, object], path: Path, hook_times: list[float] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    halves = ["calibration", "held_out"]
    names = [
        ("positives_served", "positives served"),
        ("precision", "precision"),
        ("negative_entry_rate", "negatives with an entry"),
    ]
    figure, axis = plt.subplots(figsize=(7, 3.6))
    width = 0.38
    for h, half in enumerate(halves):
        values = [float(report[half][key]) for key, _ in names]  # type: ignore[index]
        bars = axis.bar(
            [i + h * width for i in range(len(names))], values, width, label=half.replace("_", " ")
        )
        axis.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=8)
    axis.axhline(TARGET_PRECISION, color="grey", linestyle=":", linewidth=1)
    axis.axhline(TARGET_NEGATIVE_RATE, color="grey", linestyle=":", linewidth=1)
    axis.set_xticks([i + width / 2 for i in range(len(names))], [label for _, label in names])
    axis.set_ylim(0, 1.1)
    chosen = report["chosen"]
    axis.set_title(f"Recall at failure on real sessions (min words {chosen['failure_min_words']}, "  # type: ignore[index]
                   f"same check {chosen['failure_same_check']})", fontsize=9)  # type: ignore[index]  # fmt: skip
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _rows(report: dict[str, object]) -> Iterator[str]:
    for half in ("calibration", "held_out", "all"):
        m = report[half]
        assert isinstance(m, dict)
        yield (
            f"  {half:<11} failures {m['failures']:>4} (shell {m['shell_failures']:>3})  positives {m['positives']:>3}  "
            f"served {m['positives_with_entry']:>3} ({m['positives_served']:.0%})  entries {m['entries']:>3}  "
            f"precision {m['precision']:.2f}  negatives with an entry {m['negatives_with_entry']}/{m['negatives']} "
            f"({m['negative_entry_rate']:.1%})  chars/failure {m['chars_per_failure']}  chars/entry {m['chars_per_entry']}  "
            f"lookup p95 {m['lookup_p95_ms']} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("--hook-n", type=int, default=0, help="also time the hook subprocess N times")
    parser.add_argument("--chart", default="", help="write a PNG chart here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not Path(args.folder).is_dir():  # a replay of nothing is no measurement: never "precision 1.00"
        parser.error(
            f"no such folder: {args.folder} (give a folder of transcripts, such as ~/.claude/projects)"
        )

    tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-failures-"))
    try:
        base = load_settings(home=tmp / "home", embedder="hashing")
        scrubber = default_scrubber()
        sessions = load_sessions(Path(args.folder), base, scrubber)
        if not sessions:
            parser.error(f"no sessions found in {args.folder}: nothing to replay")
        runs: dict[tuple[int, bool], Replay] = {}
        for words, same in GRID:
            settings = base.model_copy(update={"failure_min_words": words, "failure_same_check": same})
            runs[(words, same)] = replay(sessions, settings, scrubber, tmp)
        calibration = {c: metrics([f for f in r.failures if not f.held_out]) for c, r in runs.items()}
        chosen = choose(calibration)
        final = runs[chosen].failures
        report: dict[str, object] = {
            "sessions": len(sessions),
            "chosen": {"failure_min_words": chosen[0], "failure_same_check": chosen[1]},
            "calibration": calibration[chosen],
            "held_out": metrics([f for f in final if f.held_out]),
            "all": metrics(final),
            "grid_calibration": {f"{w}/{s}": calibration[(w, s)] for w, s in GRID},
            "load_average_1m": round(os.getloadavg()[0], 2),
            "targets": {
                "precision": TARGET_PRECISION,
                "negative_entry_rate": TARGET_NEGATIVE_RATE,
                "hook_p95_ms": TARGET_P95_MS,
            },
        }
        if args.hook_n:
            settings = base.model_copy(
                update={"failure_min_words": chosen[0], "failure_same_check": chosen[1]}
            )
            report["hook"] = hook_latency(sessions, settings, scrubber, args.hook_n, tmp)
        if args.chart:
            chart(report, Path(args.chart))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"recall at failure: {report['sessions']} sessions of {args.folder}, replayed in time order")
    print(f"  thresholds chosen on the calibration half: {report['chosen']}")
    for row in _rows(report):
        print(row)
    if "hook" in report:
        hook = report["hook"]
        assert isinstance(hook, dict)
        print(
            f"  hook subprocess, warm server: wall p50 {hook['p50_ms']} ms  p95 {hook['p95_ms']} ms; "
            f"its CPU p50 {hook['cpu_p50_ms']} ms  p95 {hook['cpu_p95_ms']} ms  "
            f"(n={hook['n']}, injected on {hook['injected']})"
        )
    print(f"  machine load average (1 min): {report['load_average_1m']}")
    print("  targets: precision >= 0.8, negatives with an entry <= 5 %, hook p95 <= 150 ms warm")
    if args.chart:
        print(f"  chart: {args.chart}")


if __name__ == "__main__":
    main()
