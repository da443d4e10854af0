"""The history benchmark the README quotes runs end to end on a small input (numbers are not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_history_runs(episodic_home: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "scripts/bench_history.py",
            "--transcripts",
            str(REPO / "shared/episodic/demo"),
            "--sessions",
            "200",
            "--repeat",
            "1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "200 sessions from" in done.stdout and "history search (common topics" in done.stdout
