"""A worker process that ends when its parent dies, however the parent dies (`kill -9` included).

A `ProcessPoolExecutor` worker waits on a queue whose pipe it also holds open for writing, so a parent
killed without a chance to shut the pool down never sends it the end of the stream: the worker (and its
loaded model, ~130 MB) lived on. Two ways out, either enough alone:
- Linux: `prctl(PR_SET_PDEATHSIG)` has the kernel signal the worker when its parent goes. The kernel also
  signals when just the *thread* that spawned it ends (the pool spawns from whichever thread submits), so
  the signal only triggers a check of the parent pid, never an exit by itself;
- everywhere: a daemon thread compares `os.getppid()` with the parent's pid every `POLL_SECONDS` (an
  orphan is re-parented, so the pid changes); it runs while the main thread is inside BLAS.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

POLL_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_SIGNAL = signal.SIGUSR1  # unused by the workers otherwise


def _exit_if_orphaned(parent_pid: int) -> None:
    if os.getppid() != parent_pid:
        os._exit(1)  # no cleanup to run: the parent that wanted the results is gone


def _watch(parent_pid: int, poll_seconds: float) -> None:
    while True:
        _exit_if_orphaned(parent_pid)
        time.sleep(poll_seconds)


def _ask_kernel_to_signal(parent_pid: int) -> None:
    """Linux only: the parent's death (or its spawning thread's end) sends `_SIGNAL`, which checks."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(OSError, AttributeError, ValueError):
        signal.signal(_SIGNAL, lambda _signum, _frame: _exit_if_orphaned(parent_pid))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(_SIGNAL), 0, 0, 0)


def exit_with_parent(parent_pid: int, poll_seconds: float = POLL_SECONDS) -> None:
    """In a worker process: end it once `parent_pid` (the pid that started it) is no longer its parent."""
    _ask_kernel_to_signal(parent_pid)
    _exit_if_orphaned(parent_pid)  # the parent may have died before the kernel was asked
    threading.Thread(target=_watch, args=(parent_pid, poll_seconds), name="lifeline", daemon=True).start()
