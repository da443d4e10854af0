"""Benchmark the Claude Code prompt hook: end-to-end latency against a warm local server, and start-up.

    python scripts/bench_hook.py [--n 30] [--embedder hashing|minilm] [--json]

Builds a throw-away index (synthetic verified cards, and scratch-memory tool outcomes) in a temp
EPISODIC_HOME, serves it in-process on an ephemeral localhost port, then runs the hook exactly as Claude
Code does (one subprocess per prompt), with scratch memory on (the default: a second tools/call,
recall_similar) and off (EPISODIC_HOOK_SCRATCH=false).
Targets: end-to-end p95 <= 150 ms, start-up <= 100 ms; both within the hook's 1.5 s budget.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.assembly import build_memory
from episodic.cards.write import store_card
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.models import Card, DistillerInfo, Outcome
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.plumbing import envsource
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scratch.service import scratch_of

TENANT = "bench"
SYMPTOMS = [
    ("pytest cannot find a fixture after moving conftest into a subpackage", "pytest"),
    ("docker build fails with permission denied writing the npm cache", "docker"),
    ("postgres refuses connections under load: too many clients already", "postgres"),
    ("webpack dev server hot reload stops working inside a container", "webpack"),
    ("mypy reports missing library stubs for an installed package", "mypy"),
    ("git push rejected because the remote contains work you do not have", "git"),
    ("node process runs out of memory while building the production bundle", "node"),
    ("terraform plan wants to recreate a resource after a provider upgrade", "terraform"),
    ("react component renders twice in development with strict mode", "react"),
    ("github actions cache never restores between workflow runs", "ci"),
]
PROMPTS = [
    "my pytest run says fixture not found since I moved the conftest file, what is going on?",
    "the docker image build dies with permission denied when npm writes its cache",
    "under load postgres starts refusing connections with too many clients, how do I fix it",
    "hot reload of the webpack dev server no longer works when I run it in docker",
    "mypy keeps complaining about missing stubs for a library that is installed",
]


def _cards() -> list[tuple[str, Card]]:
    cards = []
    for i in range(40):
        symptom, tag = SYMPTOMS[i % len(SYMPTOMS)]
        card = Card(
            problem=f"{symptom} (variant {i})",
            steps=["reproduced it", "checked the configuration", "applied the fix and re-ran the check"],
            key_decisions=["isolated the failing step before changing anything"],
            insight=f"the root cause of {tag} issue {i} was a configuration default that did not fit",
            dead_ends=["reinstalling dependencies changed nothing", "clearing caches only hid it once"],
            misleading_intuitions=["the error message pointed at the wrong component"],
            critical_checks=["running the failing command alone reproduced it"],
            outcome=Outcome.VERIFIED if i % 4 else Outcome.UNVERIFIED,
            tags=[tag],
        )
        cards.append((f"bench-{i:03d}", card))
    return cards


OUTCOMES = [
    (
        "tests",
        "fail",
        "tests failed on test_fixtures.py — fixture 'db' not found; after moving conftest into a subpackage",
    ),
    (
        "build",
        "fail",
        "docker build failed — EACCES permission denied, mkdir npm cache; after editing Dockerfile",
    ),
    ("run", "fail", "postgres connection failed — FATAL: sorry, too many clients already"),
    (
        "run",
        "ok",
        "webpack dev server failed then passed — was: hot reload not triggered; after editing webpack.config.js",
    ),
    (
        "typecheck",
        "fail",
        "typecheck failed — error: Library stubs not installed for requests; after editing client.py",
    ),
]


def _seed_scratch(memory: object) -> int:
    """200 outcome records of the last days (40 near the prompts' symptoms, the rest filler)."""
    scratch = scratch_of(memory)  # type: ignore[arg-type]
    if scratch is None:
        return 0
    now = datetime.now(UTC)
    records = [
        ScratchRecord(
            tenant_id=TENANT,
            session_id=f"s_{i:04d}",
            tool_name=OUTCOMES[i % 5][0] if i < 40 else "lint",
            outcome=ToolOutcome(OUTCOMES[i % 5][1] if i < 40 else "fail"),
            summary=(OUTCOMES[i % 5][2] + f" (run {i})")
            if i < 40
            else f"lint failed on module_{i}.py — E501 line too long",
            created_at=now - timedelta(hours=i),
        )
        for i in range(200)
    ]
    return scratch.store.add(records, memory.embedder.embed([r.summary for r in records]), scratch.manifest)  # type: ignore[attr-defined]


def _count_judged(memory: Any) -> dict[str, int]:
    """Counts the searches whose candidates the judge read (the server runs in this process): a figure
    "with the judge" is only one when the judge answered."""
    reranker = memory.reranker
    if reranker is None:
        raise SystemExit("--reranker local: the judge's model is not installed (run scripts/install)")
    counts = {"searches": 0, "judged": 0, "past_deadline": 0}
    rerank, deadline = reranker.rerank, memory.settings.rerank_seconds

    def counted(query: str, hits: Any) -> Any:
        started = time.perf_counter()
        out = rerank(query, hits)
        late = deadline > 0 and time.perf_counter() - started > deadline  # its search kept the first stage
        counts["searches"] += 1
        counts["past_deadline"] += late
        counts["judged"] += not late and any(h.judge is not None for h in out)
        return out

    reranker.rerank = counted
    return counts


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(_pct(values, 0.5) * 1000, 1),
        "p95_ms": round(_pct(values, 0.95) * 1000, 1),
        "mean_ms": round(statistics.fmean(values) * 1000, 1),
    }


CPU: dict[str, list[float]] = {}  # child CPU seconds (user+sys) per command label: less sensitive to load


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(cmd: list[str], stdin: str, env: dict[str, str], label: str = "") -> tuple[float, str]:
    cpu_before = _child_cpu()
    started = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=30)
    elapsed = time.perf_counter() - started
    if label:
        CPU.setdefault(label, []).append(_child_cpu() - cpu_before)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr}")
    return elapsed, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="minilm")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument(
        "--reranker",
        choices=["none", "local"],
        default="none",
        help="local: the judge reads each search's candidates (the cards are then LLM-written, which it judges)",
    )
    args = parser.parse_args()
    judged = args.reranker == "local"
    kind = "claude-code" if judged else "heuristic"

    def prompt(i: int) -> str:  # with the judge, each prompt differs so its cache of read pairs never answers
        text = PROMPTS[i % len(PROMPTS)]
        return f"{text} (attempt {i})" if judged else text

    tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-"))
    try:
        home = tmp / "home"
        settings = load_settings(home=home, embedder=args.embedder, reranker=args.reranker)
        memory = build_memory(settings)
        for session_id, card in _cards():
            store_card(memory, TENANT, card, session_id=session_id, distiller=DistillerInfo(kind=kind))
        seeded = _seed_scratch(memory)
        judged = _count_judged(memory) if judged else None
        token = LocalTokenStore(settings.tokens_path).add(TENANT)
        env = {
            "PATH": envsource.environ().get("PATH", ""),
            "HOME": str(tmp),
            "EPISODIC_HOME": str(tmp / "hook-home"),
            "EPISODIC_TOKEN": token,
        }
        episodic_bin = shutil.which("episodic") or str(Path(sys.executable).with_name("episodic"))
        with BackgroundServer(build_endpoint(settings, memory)) as server:
            env["EPISODIC_URL"] = server.url
            hook = [sys.executable, "-m", "episodic.hooks.prompt"]
            for warm in PROMPTS[:3]:  # warm the server (embedder, SQLite pages)
                _time(hook, json.dumps({"prompt": warm}), env)
            e2e, injected, with_scratch = [], 0, 0
            for i in range(args.n):
                elapsed, out = _time(hook, json.dumps({"prompt": prompt(i)}), env, "end_to_end")
                e2e.append(elapsed)
                injected += bool(out)
                with_scratch += "## Prior similar attempts" in out
            no_scratch_env = {**env, "EPISODIC_HOOK_SCRATCH": "false"}
            e2e_off = [
                _time(
                    hook,
                    json.dumps({"prompt": prompt(i + args.n)}),
                    no_scratch_env,
                    "end_to_end_no_scratch",
                )[0]
                for i in range(args.n)
            ]
            startup_module = [
                _time(hook, "", env, "startup_python_m_episodic_hook")[0] for _ in range(args.n)
            ]
            cli = [episodic_bin, "hook", "user-prompt-submit"]
            startup_cli = [_time(cli, "", env, "startup_episodic_hook_cli")[0] for _ in range(args.n)]
            bare = [sys.executable, "-c", "pass"]
            bare_python = [_time(bare, "", env, "bare_python_startup")[0] for _ in range(args.n)]
        report = {
            "embedder": args.embedder,
            "end_to_end": {**_summary(e2e), "injected": injected, "with_prior_attempts": with_scratch},
            "end_to_end_no_scratch": _summary(e2e_off),
            "scratch_records": seeded,
            "startup_python_m_episodic_hook": _summary(startup_module),
            "startup_episodic_hook_cli": _summary(startup_cli),
            "bare_python_startup": _summary(bare_python),
            "child_cpu_p50_ms": {k: round(_pct(v, 0.5) * 1000, 1) for k, v in CPU.items()},
            "load_average_1m": round(os.getloadavg()[0], 2),
            "judged_searches": judged,
            "targets": {"end_to_end_p95_ms": 150, "startup_ms": 100},
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"hook benchmark (embedder {args.embedder}, N={args.n}, warm local server)")
    for name in (
        "end_to_end",
        "end_to_end_no_scratch",
        "startup_python_m_episodic_hook",
        "startup_episodic_hook_cli",
        "bare_python_startup",
    ):
        row = report[name]
        assert isinstance(row, dict)
        cpu = report["child_cpu_p50_ms"][name]  # type: ignore[index]
        print(
            f"  {name:<32} wall p50 {row['p50_ms']:>6.1f} ms  p95 {row['p95_ms']:>6.1f} ms  "
            f"mean {row['mean_ms']:>6.1f} ms   cpu p50 {cpu:>5.1f} ms"
        )
    row = report["end_to_end"]
    assert isinstance(row, dict)
    print(
        f"  injected context on {row['injected']}/{args.n} prompts "
        f"(prior similar attempts on {row['with_prior_attempts']}/{args.n}, {report['scratch_records']} outcome records)"
    )
    print(f"  machine load average (1 min) at the end: {report['load_average_1m']}")
    if judged is not None:
        print(
            f"  the judge read the candidates of {judged['judged']} of {judged['searches']} searches "
            f"({judged['past_deadline']} past its deadline)"
        )
    print("  targets: end-to-end p95 <= 150 ms, start-up <= 100 ms")


if __name__ == "__main__":
    main()
