"""Throughput of the numpy MiniLM embedder (texts/s) and the hashing embedder, on this machine.

    python scripts/bench_embed.py [--texts 64] [--threads default,1]
    python scripts/bench_embed.py --cores [--texts 256]

Each BLAS thread setting runs in a fresh subprocess (OpenBLAS reads OPENBLAS_NUM_THREADS at load time).
Texts: ~60-word card-like texts and texts long enough to hit the 256-token cap; plus one short query.
`--cores`: how a bulk call uses the machine's cores, side by side on the same ~60-word texts: one process
on one BLAS thread, one process on one BLAS thread per core, and one worker process per core with one
BLAS thread each (what `index` does).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

from episodic.plumbing import (
    envsource,  # stdlib only: numpy/BLAS are not loaded before the thread count is set
)

WORDS = [
    "the",
    "websocket",
    "client",
    "disconnects",
    "after",
    "an",
    "idle",
    "timeout",
    "and",
    "the",
    "retry",
    "loop",
    "never",
    "reconnects",
    "because",
    "the",
    "keepalive",
    "interval",
    "is",
    "longer",
    "than",
    "the",
    "load",
    "balancer",
    "timeout",
    "so",
    "we",
    "added",
    "tracing",
    "pinned",
    "the",
    "dependency",
    "wrote",
    "a",
    "failing",
    "test",
    "checked",
    "the",
    "metrics",
    "dashboard",
    "and",
    "moved",
    "the",
    "blocking",
    "call",
    "off",
    "the",
    "event",
    "loop",
    "postgres",
    "connection",
    "pool",
    "docker",
    "layer",
    "cache",
    "pytest",
    "fixture",
    "terraform",
    "plan",
    "drift",
    "lambda",
    "cold",
    "start",
    "oauth",
    "token",
    "refresh",
    "kafka",
    "consumer",
    "lag",
    "redis",
    "eviction",
    "graphql",
    "resolver",
    "migration",
]


def texts(rng: random.Random, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def measure(count: int) -> dict[str, float]:
    from episodic.embed.hashing import HashingEmbedder
    from episodic.embed.minilm import MiniLMEmbedder

    rng = random.Random(3)
    model = MiniLMEmbedder()
    started = time.perf_counter()
    model.load()
    result = {"load_s": time.perf_counter() - started}
    short, long = texts(rng, count, 60), texts(rng, count, 400)
    result["tokens_short"] = sum(model.token_counts(short)) / count
    result["tokens_long"] = sum(model.token_counts(long)) / count
    model.embed(short[:4])  # warm up
    for name, batch in (("short", short), ("long", long)):
        started = time.perf_counter()
        model.embed(batch)
        result[f"minilm_{name}_per_s"] = count / (time.perf_counter() - started)
    query = "websocket disconnects after idle timeout"
    started = time.perf_counter()
    for _ in range(20):
        model.embed([query])
    result["minilm_query_ms"] = (time.perf_counter() - started) / 20 * 1000
    hashing = HashingEmbedder()
    started = time.perf_counter()
    hashing.embed(short)
    result["hashing_short_per_s"] = count / (time.perf_counter() - started)
    return result


def measure_cores(count: int) -> None:
    from episodic.embed.minilm import MiniLMEmbedder, _blas_controller

    cores = os.cpu_count() or 1
    short = texts(random.Random(3), count, 60)
    single = MiniLMEmbedder(workers=1)
    single.embed(short[:4])  # weights loaded, caches warm
    pooled = MiniLMEmbedder(workers=cores)
    pooled.embed(short)  # the workers started and loaded (their first call is not timed)

    def rate(run: object) -> float:
        started = time.perf_counter()
        run()  # type: ignore[operator]
        return count / (time.perf_counter() - started)

    def threaded() -> object:
        with _blas_controller().limit(limits=cores, user_api="blas"):
            return single._embed(short)

    rows = [
        ("one process, 1 BLAS thread", lambda: single.embed(short)),
        (f"one process, {cores} BLAS threads", threaded),
        (f"{cores} worker processes x 1 thread", lambda: pooled.embed(short)),
    ]
    print(f"cpus: {cores}, load average: {os.getloadavg()[0]:.2f}, {count} texts of ~60 words")
    for name, run in rows:
        best = max(rate(run) for _ in range(2))
        print(f"  {name:<34} {best:6.1f} texts/s")
    pooled.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=64)
    parser.add_argument("--threads", default="default,1", help="comma list: 'default' or a number")
    parser.add_argument("--cores", action="store_true", help="processes against BLAS threads")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cores:
        measure_cores(args.texts)
        return
    if args.child:
        print(json.dumps(measure(args.texts)))
        return
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    for threads in args.threads.split(","):
        env = dict(envsource.environ())
        if threads != "default":
            env["OPENBLAS_NUM_THREADS"] = threads
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--texts", str(args.texts)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"OPENBLAS_NUM_THREADS={threads:<8} load {r['load_s']:.2f} s | "
            f"~60 words ({r['tokens_short']:.0f} tokens): {r['minilm_short_per_s']:.1f} texts/s | "
            f"{r['tokens_long']:.0f} tokens: {r['minilm_long_per_s']:.1f} texts/s | "
            f"query: {r['minilm_query_ms']:.1f} ms | hashing: {r['hashing_short_per_s']:.0f} texts/s"
        )


if __name__ == "__main__":
    main()
