"""The cores this process may use, shared by the embedder's workers and the judge's onnxruntime threads
(stdlib only: the judge runs in the MCP Lambda, which ships neither the embedder nor threadpoolctl)."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """The cores this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
