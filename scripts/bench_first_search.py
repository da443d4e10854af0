"""How soon a first `episodic index` answers searches: seconds from starting the index to the first hit.

    python scripts/bench_first_search.py [--sessions 1000] [--query "..."] [--keep DIR]

Writes a synthetic history of N sessions (the bundled demo sessions, each copy under its own session id,
with its own first prompt and file time, newest last written), starts `episodic index` on it in a fresh
home, and meanwhile runs `episodic search --json` again and again (each a new process, as a user or the
hook would) until one answers with a hit. Reports that time, every search's outcome (a search that fails
or waits on the index would show here) and the index's own wall time. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "shared" / "episodic" / "demo"
NS = uuid.UUID("5b0c9f0e-33aa-4c1e-8e61-0d1f2a3b4c5d")
QUERY = "tests pass on my machine but the CI pipeline fails"


def write_history(out: Path, sessions: int) -> None:
    """`sessions` copies of the demo sessions, each with a new session id, prompt suffix and mtime."""
    templates = sorted(DEMO.rglob("*.jsonl"))
    now = time.time()
    for i in range(sessions):
        template = templates[i % len(templates)]
        session_id = str(uuid.uuid5(NS, str(i)))
        lines = []
        prompted = False
        for raw in template.read_text().splitlines():
            entry: dict[str, Any] = json.loads(raw)
            entry["sessionId"] = session_id
            message = entry.get("message") or {}
            if not prompted and entry.get("type") == "user" and isinstance(message.get("content"), str):
                message["content"] += f" (ticket {i}, team {i % 17})"
                prompted = True
            lines.append(json.dumps(entry))
        folder = out / f"{template.parent.name}-{i % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session_id}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        stamp = now - (sessions - i) * 60  # one a minute: the last written is the newest
        os.utime(path, (stamp, stamp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--keep", type=Path, help="write the history here (default: a temporary folder)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up after this many seconds")
    parser.add_argument(
        "--stop-after-first", action="store_true", help="stop the index once a search has answered"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-first-search-") as tmp:
        history = args.keep or Path(tmp) / "history"
        write_history(history, args.sessions)
        env = {**os.environ, "HOME": tmp, "EPISODIC_HOME": str(Path(tmp) / ".episodic")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "shared"), env.get("PYTHONPATH")]))
        started = time.perf_counter()
        # a file, not a pipe: the index's worker processes inherit it and may outlive a stopped index
        index_out = Path(tmp) / "index.json"
        index = subprocess.Popen(
            [sys.executable, "-m", "episodic", "index", str(history), "--json"],
            env=env,
            stdout=index_out.open("w"),
            stderr=subprocess.DEVNULL,
        )
        searches: list[dict[str, Any]] = []
        first_hit: float | None = None
        while time.perf_counter() - started < args.timeout:
            index_ended = index.poll() is not None  # before asking: a search asked meanwhile may miss
            asked = time.perf_counter() - started
            proc = subprocess.run(
                [sys.executable, "-m", "episodic", "search", args.query, "--all-outcomes", "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            answered = time.perf_counter() - started
            ok = proc.returncode == 0 and proc.stdout.strip()
            hits = len(json.loads(proc.stdout)["results"]) if ok else 0
            outcome = (
                "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
            )
            searches.append(
                {
                    "asked_s": round(asked, 1),
                    "answered_s": round(answered, 1),
                    "hits": hits,
                    "outcome": outcome,
                }
            )
            print(
                f"  search asked at {asked:5.1f}s answered at {answered:5.1f}s: {hits} hits ({outcome})",
                flush=True,
            )
            if hits and first_hit is None:
                first_hit = answered
                break
            if index_ended and not hits:
                break
        if args.stop_after_first and first_hit is not None and index.poll() is None:
            index.terminate()  # our own child: the measurement is taken, the rest of the index is not needed
        index.wait(timeout=args.timeout)
        index_wall = time.perf_counter() - started
        out = index_out.read_text()
        report = json.loads(out) if index.returncode == 0 and out.strip() else {}
        print(
            f"{args.sessions} sessions: first search with a hit answered {first_hit:.1f}s after `episodic index` started; "
            f"index ended after {index_wall:.1f}s (indexed {report.get('indexed')}, exit {index.returncode}); "
            f"load average {os.getloadavg()[0]:.2f}"
            if first_hit is not None
            else f"no search answered with a hit (index exit {index.returncode}, {index_wall:.1f}s)"
        )


if __name__ == "__main__":
    main()
