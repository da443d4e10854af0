"""Disk used by kept trajectories, per session and per 1,000 sessions, over a transcripts folder.

    python scripts/bench_kept.py [TRANSCRIPTS_DIR]

Default folder: ../shared/transcripts beside the repository. Every episode found (Claude Code, Codex and
Gemini CLI files) is parsed and scrubbed as `episodic index` does, then written with the real store
(`episodic.store.kept_trajectories.KeptTrajectoryFiles`, xz preset 2) into a temporary folder. Reported: the raw
transcript bytes of those episodes, the kept bytes (file sizes and the blocks the filesystem allocated),
and the same trajectories as plain JSON, gzip 9 and xz preset 6 (stdlib) for comparison; per 1,000
sessions is the mean kept size times 1,000 (this corpus's mix of session lengths). Times are process CPU
time per session (one core) for a write and a read back.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import statistics
import tempfile
import time
from pathlib import Path

from episodic.kernel.models import Trajectory
from episodic.kernel.settings import Settings
from episodic.parse.agents import AllAgentsSource
from episodic.scrub import default_scrubber
from episodic.store.kept_trajectories import SUFFIX, KeptTrajectoryFiles

REPO = Path(__file__).resolve().parents[1]
TENANT = "bench"


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "transcripts"))
    args = parser.parse_args()
    source = AllAgentsSource.from_settings(Settings(), default_scrubber(), scan_home=False)
    trajectories: list[Trajectory] = []
    raw = 0
    found = list(source.discover([args.folder]))
    for session in found:
        loaded = source.load(session)
        if isinstance(loaded, Trajectory):
            trajectories.append(loaded)
            raw += session.total_bytes
    if not trajectories:
        raise SystemExit(f"no episodes under {args.folder}")
    sizes, blocks = [], 0
    write_s = read_s = 0.0
    plain = gzip9 = xz6 = 0
    with tempfile.TemporaryDirectory() as tmp:
        kept = KeptTrajectoryFiles(Path(tmp), max_bytes=1 << 40)
        for trajectory in trajectories:
            started = time.process_time()
            kept.keep(TENANT, trajectory)
            write_s += time.process_time() - started
            started = time.process_time()
            back = kept.get(TENANT, trajectory.session_id)
            read_s += time.process_time() - started
            assert back is not None and back.source_sha256 == trajectory.source_sha256
            data = trajectory.model_dump_json().encode("utf-8")
            plain += len(data)
            gzip9 += len(gzip.compress(data, 9))
            xz6 += len(lzma.compress(data, preset=6))
        for path in kept.folder(TENANT).glob("*" + SUFFIX):
            stat = path.stat()
            sizes.append(stat.st_size)
            blocks += stat.st_blocks * 512
    n = len(sizes)
    total = sum(sizes)
    print(f"sessions: {len(found)} found, {len(trajectories)} episodes kept ({n} files)")
    print(f"raw transcripts of those episodes: {_mb(raw)}")
    print(
        f"kept (xz 2): {_mb(total)} ({total / raw:.1%} of raw), {_mb(blocks)} allocated; per session "
        f"median {statistics.median(sizes) / 1e3:.1f} kB, p95 "
        f"{sorted(sizes)[min(n - 1, int(0.95 * n))] / 1e3:.1f} kB, max {max(sizes) / 1e3:.1f} kB"
    )
    print(f"compared: plain JSON {_mb(plain)}, gzip 9 {_mb(gzip9)}, xz 6 {_mb(xz6)}")
    print(
        f"per 1,000 sessions: {total / n * 1000 / 1e6:.0f} MB kept ({blocks / n * 1000 / 1e6:.0f} MB allocated), "
        f"gzip 9 would be {gzip9 / n * 1000 / 1e6:.0f} MB"
    )
    print(f"CPU per session: write {write_s / n * 1000:.1f} ms, read {read_s / n * 1000:.1f} ms")


if __name__ == "__main__":
    main()
