"""Live processes by their arguments, read from Linux /proc (tests that check what a command left running)."""

from __future__ import annotations

from pathlib import Path


def pids_with_args(*args: str) -> list[int]:
    """Pids of the processes whose argv holds every one of `args` as a whole argument."""
    wanted = [a.encode() for a in args]
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not a process folder
            continue
        if all(w in argv for w in wanted):
            found.append(int(proc.name))
    return found
