"""Issue 14 item 16: scripts/bench_serve.py runs the real server on loopback, bounded, and reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_serve.py"


@pytest.mark.slow
def test_bench_serve_reports_throughput_and_latency(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")}, "HOME": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--clients",
            "3",
            "--requests",
            "4",
            "--embedder",
            "hashing",
            "--max-seconds",
            "60",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["searches"] == 12 and report["errors"] == 0, report
    assert report["searches_per_second"] > 0 and report["p50_ms"] <= report["p95_ms"] <= report["p99_ms"]
