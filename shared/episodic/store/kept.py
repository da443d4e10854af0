"""Kept trajectories on this machine: `<home>/trajectories/<tenant>/<session>~<hash>.json.xz`.

One xz-compressed JSON `Trajectory` a session (already scrubbed: what a distiller reads, never the raw
transcript). The source hash in the name lets an unchanged session be skipped with one directory read; a
grown session's new file replaces the old one (written beside it, then renamed: a reader never sees half a
file). Each file's mtime is its session's end, so eviction under the per-tenant cap drops the oldest
sessions first without opening a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import lzma
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from episodic.models import Trajectory, check_tenant
from episodic.ports import KeptTrajectories
from episodic.private_home import DIR_MODE, FILE_MODE

log = logging.getLogger(__name__)

KEPT_FOLDER = "trajectories"  # below the home: `<home>/trajectories/<tenant>/`
SUFFIX = ".json.xz"
_SEPARATOR = "~"  # never in a safe session id: `<session>~<hash16>.json.gz`
_SAFE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# scripts/bench_kept.py: xz preset 2 is half gzip 9's size for about its time (~12 ms a session to write)
XZ_PRESET = 2


def _file_stem(session_id: str) -> str:
    """A session id safe as a file name as it is; any other id by its hash (never a path)."""
    if _SAFE_ID_RE.match(session_id):
        return session_id
    return "h-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:40]


def _session_end(trajectory: Trajectory) -> float:
    moment = trajectory.ended_at or trajectory.started_at
    if moment is None:
        return datetime.now(UTC).timestamp()
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


class KeptTrajectoryFiles(KeptTrajectories):
    """The local kept trajectories under `root` (`<home>/trajectories`), at most `max_bytes` per tenant."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def folder(self, tenant_id: str) -> Path:
        return self.root / check_tenant(tenant_id)

    def _files(self, tenant_id: str, session_id: str) -> list[Path]:
        folder = self.folder(tenant_id)
        if not folder.is_dir():
            return []
        return sorted(folder.glob(f"{_file_stem(session_id)}{_SEPARATOR}*{SUFFIX}"))

    def keep(self, tenant_id: str, trajectory: Trajectory) -> bool:
        folder = self.folder(tenant_id)
        name = f"{_file_stem(trajectory.session_id)}{_SEPARATOR}{trajectory.source_sha256[:16]}{SUFFIX}"
        earlier = self._files(tenant_id, trajectory.session_id)
        if folder / name in earlier:
            return False  # unchanged since it was kept
        for path in (self.root, folder):
            path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        data = lzma.compress(trajectory.model_dump_json().encode("utf-8"), preset=XZ_PRESET)
        fd, tmp = tempfile.mkstemp(prefix=".kept-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, FILE_MODE)
            end = _session_end(trajectory)
            os.utime(tmp, (end, end))
            os.replace(tmp, folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        for old in earlier:  # the grown session's earlier file
            with contextlib.suppress(FileNotFoundError):
                old.unlink()
        return True

    def get(self, tenant_id: str, session_id: str) -> Trajectory | None:
        files = self._files(tenant_id, session_id)
        for path in sorted(files, key=_mtime, reverse=True):  # two only in a race: the later session
            try:
                trajectory = Trajectory.model_validate_json(lzma.decompress(path.read_bytes()))
            except (
                OSError,
                EOFError,
                ValueError,
                lzma.LZMAError,
            ) as exc:  # a damaged file is a missing one, said in the log
                log.warning("kept trajectory %s is unreadable: %s", path, exc)
                continue
            if trajectory.session_id == session_id:
                return trajectory
        return None

    def has(self, tenant_id: str, session_id: str) -> bool:
        return bool(self._files(tenant_id, session_id))

    def delete(self, tenant_id: str, session_id: str) -> bool:
        found = False
        for path in self._files(tenant_id, session_id):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                found = True
        return found

    def _listing(self, tenant_id: str) -> list[tuple[Path, int, float]]:
        folder = self.folder(tenant_id)
        if not folder.is_dir():
            return []
        out = []
        for path in folder.glob(f"*{SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                stat = path.stat()
                out.append((path, stat.st_size, stat.st_mtime))
        return out

    def usage(self, tenant_id: str) -> tuple[int, int]:
        """(sessions kept, bytes on disk) for the tenant."""
        listing = self._listing(tenant_id)
        return len(listing), sum(size for _, size, _ in listing)

    def evict(self, tenant_id: str) -> int:
        listing = sorted(self._listing(tenant_id), key=lambda item: item[2])  # the oldest session first
        total = sum(size for _, size, _ in listing)
        gone = 0
        for path, size, _ in listing:
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                gone += 1
            total -= size
        return gone


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
