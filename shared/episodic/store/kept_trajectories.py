"""Kept trajectories on this machine: `<home>/trajectories/<tenant>/<session>.kept`.

One file a session: a header line `episodic-kept 1 <source sha256>` then the xz-compressed JSON
`Trajectory` (already scrubbed: what a distiller reads, never the raw transcript; read it with
`tail -n +2 FILE | xz -d`). The header lets an unchanged session be skipped by reading one line, and a
grown session's file is replaced by a rename (written beside it first: a reader never sees half a file).
Each file's mtime is its session's end, so eviction under the per-tenant cap drops the oldest sessions
first without opening a file.

A session id that is a safe file name is its own stem; any other id, and every id starting `h-` (any
case), is `h-<sha256 prefix>`: the two name spaces never meet, so no session's id names another's file.
Readers open regular files only, never through a link, and decompress at most MAX_JSON_BYTES (a small
file that inflates to gigabytes is refused as damaged); a trajectory larger than that is not kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import lzma
import os
import re
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from episodic.kernel.models import Trajectory, check_tenant
from episodic.kernel.ports import KeptTrajectories
from episodic.plumbing import bounded
from episodic.plumbing.private_home import DIR_MODE, FILE_MODE

log = logging.getLogger(__name__)

KEPT_FOLDER = "trajectories"  # below the home: `<home>/trajectories/<tenant>/`
SUFFIX = ".kept"
MAGIC = b"episodic-kept 1 "
_HEADER_BYTES = len(MAGIC) + 64 + 1  # the magic, the source sha256 in hex, a newline
_SAFE_ID_RE = re.compile(r"^(?![hH]-)[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")  # `h-…`: hashed stems only
_LEGACY_SAFE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")  # before `h-` ids were hashed too
# a kept trajectory's JSON: ~1/3 of its transcript (1.4 MB for the largest of ../shared/transcripts, 3.9 MB)
MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = MAX_JSON_BYTES  # xz never grows JSON: a larger file is no kept trajectory
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


class TooLarge(ValueError):
    """A trajectory over MAX_JSON_BYTES: not kept (and a kept file inflating past it is refused)."""


def encode(trajectory: Trajectory) -> bytes:
    """The file's bytes: the header line, then the xz'd JSON trajectory."""
    text = trajectory.model_dump_json().encode("utf-8")
    if len(text) > MAX_JSON_BYTES:
        raise TooLarge(f"the trajectory is {len(text)} bytes of JSON, over {MAX_JSON_BYTES}")
    return _header(trajectory.source_sha256) + lzma.compress(text, preset=XZ_PRESET)


def _inflate(body: bytes, limit: int = MAX_JSON_BYTES) -> bytes:
    """The xz stream's content, never more than `limit` bytes of it held (TooLarge past it)."""
    inflater = lzma.LZMADecompressor()
    try:
        text = inflater.decompress(body, max_length=limit + 1)
    except lzma.LZMAError as exc:
        raise ValueError(f"damaged: {exc}") from exc
    if len(text) > limit:
        raise TooLarge(f"damaged: it inflates past {limit} bytes")
    if not inflater.eof:
        raise ValueError("damaged: the xz stream is cut short")
    if inflater.unused_data:  # one stream a file: more streams are no kept trajectory of ours
        raise ValueError("damaged: data after the xz stream")
    return text


def decode(data: bytes) -> Trajectory:
    """A kept file's trajectory; ValueError for anything that is not one."""
    if not data.startswith(MAGIC) or data[_HEADER_BYTES - 1 : _HEADER_BYTES] != b"\n":
        raise ValueError("not a kept trajectory (no header)")
    return Trajectory.model_validate_json(_inflate(data[_HEADER_BYTES:]))


def _read(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, never through a link (FileNotFoundError when absent; OSError otherwise)."""
    return bounded.read_regular(path, max_bytes, follow_links=False)


def _is_kept_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


class KeptTrajectoryFiles(KeptTrajectories):
    """The local kept trajectories under `root` (`<home>/trajectories`), at most `max_bytes` per tenant."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def folder(self, tenant_id: str) -> Path:
        return self.root / check_tenant(tenant_id)

    def path(self, tenant_id: str, session_id: str) -> Path:
        return self.folder(tenant_id) / f"{_file_stem(session_id)}{SUFFIX}"

    def _legacy_path(self, tenant_id: str, session_id: str) -> Path | None:
        """Where an `h-…` id was kept before such ids were hashed (read when it holds that session)."""
        if _SAFE_ID_RE.match(session_id) or not _LEGACY_SAFE_ID_RE.match(session_id):
            return None
        return self.folder(tenant_id) / f"{session_id}{SUFFIX}"

    def _legacy(self, tenant_id: str, session_id: str) -> tuple[Path, Trajectory] | None:
        path = self._legacy_path(tenant_id, session_id)
        if path is None:
            return None
        found = self._decoded(path)
        return (path, found) if found is not None and found.session_id == session_id else None

    def keep(self, tenant_id: str, trajectory: Trajectory) -> bool:
        target = self.path(tenant_id, trajectory.session_id)
        try:
            if bounded.read_head(target, _HEADER_BYTES, follow_links=False)[0] == _header(
                trajectory.source_sha256
            ):
                return False  # unchanged since it was kept
        except OSError:  # absent, or no regular file: (re)written by the rename below
            pass
        data = encode(trajectory)  # TooLarge: not kept (the caller logs it)
        for folder in (self.root, target.parent):
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kept-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, FILE_MODE)
            end = _session_end(trajectory)
            os.utime(tmp, (end, end))
            os.replace(tmp, target)  # a grown session's earlier file goes in the same step
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        legacy = self._legacy(tenant_id, trajectory.session_id)
        if legacy is not None:  # moved to its hashed name: the old one goes
            with contextlib.suppress(OSError):
                legacy[0].unlink()
        return True

    def _decoded(self, path: Path) -> Trajectory | None:
        try:
            return decode(_read(path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a damaged file is a missing one, said in the log
            log.warning("kept trajectory %s is unreadable: %s", path, exc)
            return None

    def get(self, tenant_id: str, session_id: str) -> Trajectory | None:
        trajectory = self._decoded(self.path(tenant_id, session_id))
        if trajectory is not None and trajectory.session_id == session_id:
            return trajectory
        legacy = self._legacy(tenant_id, session_id)
        return legacy[1] if legacy is not None else None

    def has(self, tenant_id: str, session_id: str) -> bool:
        return (
            _is_kept_file(self.path(tenant_id, session_id)) or self._legacy(tenant_id, session_id) is not None
        )

    def delete(self, tenant_id: str, session_id: str) -> bool:
        legacy = self._legacy(tenant_id, session_id)
        gone = False
        for path in (self.path(tenant_id, session_id), legacy[0] if legacy else None):
            if path is None:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                gone = True
        return gone

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
