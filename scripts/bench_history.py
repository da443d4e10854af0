#!/usr/bin/env python3
"""History search latency at N sessions: real transcripts' history records, cloned to N sessions (new ids,
dates spread over a year) in a fresh SQLite history store; then `history search` (the core function, limit
20) for a set of topics, timed in wall and CPU time. Prints p50/p95 per kind of topic and the store's size.

Usage: scripts/bench_history.py [--transcripts DIR] [--sessions 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "shared"))

from episodic.assembly import build_memory, build_scrubber  # noqa: E402
from episodic.history.extract import history_record  # noqa: E402
from episodic.history.service import kept_history, search_history  # noqa: E402
from episodic.kernel.models import LOCAL_TENANT, Trajectory  # noqa: E402
from episodic.kernel.settings import load_settings  # noqa: E402

TOPICS = {
    "rare": ["posthog", "rebase conflict", "telemetry"],
    "common": ["test", "session", "checkpoint"],
    "absent": ["zebra quantum"],
}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--transcripts", default=str(REPO.parent / "shared" / "transcripts" / "entireio__cli")
    )
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        settings = load_settings(home=Path(tmp), embedder="hashing")
        memory = build_memory(settings)
        assert kept_history(memory) is not None
        scrubber = build_scrubber(settings)
        base = []
        for source in memory.source.discover([args.transcripts]):
            loaded = memory.source.load(source)
            if isinstance(loaded, Trajectory):
                base.append(history_record(loaded, LOCAL_TENANT, scrubber))
        if not base:
            raise SystemExit(f"no sessions under {args.transcripts}")
        start = datetime(2026, 1, 1, tzinfo=UTC)
        began = time.perf_counter()
        for i in range(args.sessions):
            template = base[i % len(base)]
            kept_history(memory).put(
                template.model_copy(
                    update={
                        "session_id": f"{template.session_id}-{i}",
                        "source_sha256": f"{i:064x}",
                        "started_at": start + timedelta(minutes=53 * i),
                    }
                )
            )
        write_s = time.perf_counter() - began
        size_mb = sum(p.stat().st_size for p in Path(tmp).glob("history.sqlite3*")) / 1e6
        print(
            f"{args.sessions} sessions from {len(base)} real records: stored in {write_s:.1f} s "
            f"({1000 * write_s / args.sessions:.2f} ms each), history store {size_mb:.0f} MB"
        )
        for kind, topics in TOPICS.items():
            wall, cpu, hits = [], [], []
            for _ in range(args.repeat):
                for topic in topics:
                    w, c = time.perf_counter(), time.process_time()
                    found = search_history(memory, LOCAL_TENANT, topic, limit=20)
                    wall.append(1000 * (time.perf_counter() - w))
                    cpu.append(1000 * (time.process_time() - c))
                    hits.append(len(found))
            print(
                f"history search ({kind} topics {topics}): wall p50 {statistics.median(wall):.1f} ms, "
                f"p95 {_pct(wall, 0.95):.1f} ms; CPU p50 {statistics.median(cpu):.1f} ms; "
                f"hits per query {min(hits)}-{max(hits)} (limit 20)"
            )


if __name__ == "__main__":
    main()
