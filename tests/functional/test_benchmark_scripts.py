"""Every benchmark the README quotes runs end to end (small inputs): a refactor that breaks one fails here.

Numbers are not checked (tests time nothing); the scripts' own labels and a clean exit are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "shared" / "episodic" / "demo"
ONE_PROJECT = DEMO / "home-dev-webshop"  # one session: a cold index's two runs need no more

CASES = {
    "bench_parse": (["scripts/bench_parse.py", str(DEMO), "--repeat", "1"], "parse+scrub+distill:"),
    "bench_kept": (["scripts/bench_kept.py", str(DEMO)], "per 1,000 sessions:"),
    "survey_sizes": (["scripts/survey_sizes.py", str(DEMO)], "budget 6000: median"),
    "bench_scrub": (
        ["scripts/bench_scrub.py", "--transcripts", str(DEMO), "--repeat", "1", "--synthetic-mb", "2"],
        "redactions per kind",
    ),
    "bench_search": (
        [
            "scripts/bench_search.py",
            "--cards",
            "300",
            "--queries",
            "5",
            "--no-minilm",
            "--other-tenant",
            "50",
        ],
        "store.query (all outcomes, tag filter)",
    ),
    "bench_embed": (["scripts/bench_embed.py", "--texts", "4", "--threads", "1"], "texts/s"),
    "bench_embed_cores": (
        ["scripts/bench_embed.py", "--cores", "--texts", "8"],
        "worker processes x 1 thread",
    ),
    "bench_matmul_precision": (
        ["scripts/bench_matmul_precision.py", "--repeat", "1", "--rows", "128"],
        "x float32",
    ),
    "bench_hook": (
        ["scripts/bench_hook.py", "--n", "3", "--embedder", "hashing"],
        "injected context on 3/3 prompts (prior similar attempts on 3/3",
    ),
    "bench_failures": (["scripts/bench_failures.py", str(DEMO), "--hook-n", "2"], "recall at failure:"),
    "bench_failure_hook_agents": (
        ["scripts/bench_failure_hook_agents.py", "--n", "2", "--rollout-mb", "1"],
        "gemini: a succeeded command, n=2",
    ),
    "bench_hook_agents": (
        ["scripts/bench_hook_agents.py", "--n", "2", "--down-n", "1", "--embedder", "hashing"],
        "gemini       p50",
    ),
    "bench_hook_cold": (["scripts/bench_hook_cold.py", "--n", "1", "--embedder", "hashing"], "first prompt"),
    "bench_index": (
        ["scripts/bench_index.py", str(ONE_PROJECT), "--rounds", "1", "--baseline-tree", str(REPO)],
        "new/baseline wall: median",
    ),
    "bench_first_search": (
        ["scripts/bench_first_search.py", "--sessions", "6"],
        "first search with a hit answered",
    ),
    "bench_injections": (
        ["scripts/bench_injections.py", "--records", "500", "--calls", "20"],
        "500 records: given + add per hook call, median",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_benchmark_script_runs(name: str, episodic_home: Path) -> None:
    args, expected = CASES[name]
    env = {**os.environ, "EPISODIC_HOME": str(episodic_home)}
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout + done.stderr, done.stdout[-2000:]
