"""Throughput of `episodic serve` under N concurrent clients (loopback only, bounded in count and time).

Starts the real server (`python -m episodic serve --port 0`) on 127.0.0.1 over a temporary home indexed
from the bundled demo corpus (or --home, already indexed), creates a read token, then runs N client
threads, each with one keep-alive HTTP connection, sending `search_traces` tools/call requests with
varied symptom queries (every query distinct per client, so no cache can flatter the result). Reports
searches/s and p50/p95/p99 latency as the clients saw it.

    python scripts/bench_serve.py [--clients 20] [--requests 50] [--embedder minilm] [--max-seconds 120]

Bounded: at most 64 clients, 200 requests each and --max-seconds of wall time; the server binds
127.0.0.1 only and the clients connect nowhere else.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "shared" / "episodic" / "demo"
MAX_CLIENTS, MAX_REQUESTS = 64, 200
SYMPTOMS = [
    "pytest cannot find a fixture after moving the conftest",
    "docker build fails with permission denied on the npm cache",
    "the websocket client reconnects in a loop after a deploy",
    "postgres connection pool exhausted under load",
    "terraform plan shows changes on every run",
    "the react component renders twice in development",
    "lambda cold start takes several seconds",
    "s3 upload fails with a signature mismatch",
    "oauth token refresh races between two tabs",
    "the celery worker stops consuming after a redis restart",
    "typescript build is slow after adding project references",
    "git rebase lost a commit after a conflict",
]
QUALIFIERS = ["again", "on ci", "locally", "since the upgrade", "intermittently", "after a restart", ""]


def _env(home: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")}
    env.update({"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": embedder})
    return env


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"episodic {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout


def _start_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "episodic", "serve", "--host", "127.0.0.1", "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep the pipe drained
            return proc, url
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("the server did not start")


def _client(
    url: str, token: str, queries: list[str], deadline: float, out: list[float], errors: list[str]
) -> None:
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    if host not in ("127.0.0.1", "localhost", "[::1]"):
        raise SystemExit("bench_serve talks to loopback only")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2025-11-25",
    }
    for i, query in enumerate(queries):
        if time.monotonic() > deadline:
            break
        body = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "search_traces", "arguments": {"query": query, "k": 3}},
        }
        started = time.perf_counter()
        try:
            conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200 or "result" not in json.loads(payload):
                errors.append(f"HTTP {response.status}")
                continue
        except (OSError, http.client.HTTPException) as exc:
            errors.append(type(exc).__name__)
            conn.close()
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            continue
        out.append(time.perf_counter() - started)
    conn.close()


def _queries(client: int, count: int) -> list[str]:
    rng = random.Random(client)
    return [
        f"{rng.choice(SYMPTOMS)} {rng.choice(QUALIFIERS)} (client {client} try {i})" for i in range(count)
    ]


def bench(url: str, token: str, clients: int, requests: int, max_seconds: float) -> dict[str, Any]:
    _client(url, token, ["warm-up query for the model"], time.monotonic() + 60, [], [])
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + max_seconds
    threads = [
        threading.Thread(
            target=_client, args=(url, token, _queries(c, requests), deadline, latencies, errors)
        )
        for c in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")

    return {
        "clients": clients,
        "searches": len(latencies),
        "errors": len(errors),
        "seconds": round(elapsed, 2),
        "searches_per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p95_ms": round(pct(0.95), 1),
        "p99_ms": round(pct(0.99), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50, help="searches per client")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--home", type=Path, help="an already indexed EPISODIC_HOME (default: a temp one)")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args()
    clients = max(1, min(args.clients, MAX_CLIENTS))
    requests = max(1, min(args.requests, MAX_REQUESTS))
    temp = None
    home = args.home
    if home is None:
        temp = tempfile.mkdtemp(prefix="bench-serve-")
        home = Path(temp) / "home"
        cache = Path.home() / ".episodic" / "cache"
        if cache.is_dir():  # reuse cached embeddings; the model itself comes from its package
            shutil.copytree(cache, home / "cache")
    env = _env(home, args.embedder)
    try:
        if args.home is None:
            _run(["index", str(DEMO), "--json"], env)
        token = _run(["token", "add", "--tenant", "local"], env).strip()
        proc, url = _start_server(env)
        try:
            result = bench(url, token, clients, requests, args.max_seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        result.update({"embedder": args.embedder, "cpus": os.cpu_count()})
        print(json.dumps(result, indent=2))
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
