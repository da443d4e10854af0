"""Kept trajectories on this machine: `<home>/trajectories/<tenant>/<session>.kept`.

One file a session: a header line `episodic-kept 1 <source sha256>` then the xz-compressed JSON
`Trajectory` (already scrubbed: what a distiller reads, never the raw transcript; read it with
`tail -n +2 FILE | xz -d`). The header lets an unchanged session be skipped by reading one line, and a
grown session's file is replaced by a rename (written beside it first: a reader never sees half a file).
Each file's mtime is its session's end, so eviction under the per-tenant cap drops the oldest sessions
first without opening a file.
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
SUFFIX = ".kept"
MAGIC = b"episodic-kept 1 "
_HEADER_BYTES = len(MAGIC) + 64 + 1  # the magic, the source sha256 in hex, a newline
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


def _header(sha256: str) -> bytes:
    return MAGIC + sha256.encode("ascii", "replace")[:64].ljust(64, b"0") + b"\n"


def encode(trajectory: Trajectory) -> bytes:
    """The file's bytes: the header line, then the xz'd JSON trajectory."""
    body = lzma.compress(trajectory.model_dump_json().encode("utf-8"), preset=XZ_PRESET)
    return _header(trajectory.source_sha256) + body


def decode(data: bytes) -> Trajectory:
    """A kept file's trajectory; ValueError for anything that is not one."""
    if not data.startswith(MAGIC) or data[_HEADER_BYTES - 1 : _HEADER_BYTES] != b"\n":
        raise ValueError("not a kept trajectory (no header)")
    try:
        return Trajectory.model_validate_json(lzma.decompress(data[_HEADER_BYTES:]))
    except (lzma.LZMAError, EOFError) as exc:
        raise ValueError(f"damaged: {exc}") from exc


class KeptTrajectoryFiles(KeptTrajectories):
    """The local kept trajectories under `root` (`<home>/trajectories`), at most `max_bytes` per tenant."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def folder(self, tenant_id: str) -> Path:
        return self.root / check_tenant(tenant_id)

    def path(self, tenant_id: str, session_id: str) -> Path:
        return self.folder(tenant_id) / f"{_file_stem(session_id)}{SUFFIX}"

    def keep(self, tenant_id: str, trajectory: Trajectory) -> bool:
        target = self.path(tenant_id, trajectory.session_id)
        try:
            with target.open("rb") as handle:
                if handle.read(_HEADER_BYTES) == _header(trajectory.source_sha256):
                    return False  # unchanged since it was kept
        except FileNotFoundError:
            pass
        for folder in (self.root, target.parent):
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kept-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(encode(trajectory))
            os.chmod(tmp, FILE_MODE)
            end = _session_end(trajectory)
            os.utime(tmp, (end, end))
            os.replace(tmp, target)  # a grown session's earlier file goes in the same step
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return True

    def get(self, tenant_id: str, session_id: str) -> Trajectory | None:
        path = self.path(tenant_id, session_id)
        try:
            trajectory = decode(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a damaged file is a missing one, said in the log
            log.warning("kept trajectory %s is unreadable: %s", path, exc)
            return None
        return trajectory if trajectory.session_id == session_id else None

    def has(self, tenant_id: str, session_id: str) -> bool:
        return self.path(tenant_id, session_id).is_file()

    def delete(self, tenant_id: str, session_id: str) -> bool:
        try:
            self.path(tenant_id, session_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def _listing(self, tenant_id: str) -> list[tuple[Path, int, float]]:
        folder = self.folder(tenant_id)
        if not folder.is_dir():
            return []
        out = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        stat = entry.stat(follow_symlinks=False)
                        out.append((Path(entry.path), stat.st_size, stat.st_mtime))
        return out

    def usage(self, tenant_id: str) -> tuple[int, int]:
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
