"""Cheaper arithmetic for MiniLM in numpy? One feed-forward matmul of a 128-text batch (86 tokens each, one
BLAS thread, like an embedding worker) in float32, float16 and int8 (accumulated in int32), best of N.

    python scripts/bench_matmul_precision.py [--repeat 3] [--rows 1376]

numpy has BLAS kernels for float32 only: the others run in its generic loops, so a lower precision is
slower here, whatever it would save in a runtime with int8/fp16 kernels (a new dependency).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

ROWS, HIDDEN, INTERMEDIATE = 128 * 86 // 8, 384, 1536  # an eighth of a 128-text batch's tokens: same per row


def best_of(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=ROWS, help="token rows (fewer: a quick run)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a32 = rng.standard_normal((args.rows, HIDDEN), dtype=np.float32)
    w32 = rng.standard_normal((HIDDEN, INTERMEDIATE), dtype=np.float32)
    a16, w16 = a32.astype(np.float16), w32.astype(np.float16)
    a8 = np.clip(a32 * 30, -127, 127).astype(np.int8).astype(np.int32)
    w8 = np.clip(w32 * 30, -127, 127).astype(np.int8).astype(np.int32)
    with threadpool_limits(1):
        f32 = best_of(args.repeat, lambda: a32 @ w32)
        f16 = best_of(args.repeat, lambda: a16 @ w16)
        i8 = best_of(args.repeat, lambda: a8 @ w8)
    print(f"({args.rows}x{HIDDEN}) @ ({HIDDEN}x{INTERMEDIATE}), one thread, best of {args.repeat}:")
    print(f"  float32 {f32 * 1e3:8.1f} ms")
    print(f"  float16 {f16 * 1e3:8.1f} ms  ({f16 / f32:.0f}x float32)")
    print(f"  int8    {i8 * 1e3:8.1f} ms  ({i8 / f32:.0f}x float32, int32 accumulation)")


if __name__ == "__main__":
    main()
