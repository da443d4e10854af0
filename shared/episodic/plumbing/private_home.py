"""The home folder holds an index of source code and tokens: owner-only (700 folder, 600 files).

Created that way; found looser (an older install, a umask of 022), it is tightened with one note on stderr.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)
DIR_MODE = 0o700
FILE_MODE = 0o600


def _tighten(path: Path, wanted: int) -> None:
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    if current & 0o077:
        try:
            os.chmod(path, wanted)
        except OSError as exc:
            log.warning(
                "note: %s is readable by other users (%o) and could not be tightened: %s", path, current, exc
            )
            return
        log.warning(
            "note: tightened %s from %o to %o (it holds your indexed sessions)", path, current, wanted
        )


def secure_home(home: Path, db_path: Path) -> None:
    """Create (or tighten) the home folder 700 and the index file 600 before SQLite opens it."""
    home.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    _tighten(home, DIR_MODE)
    if not db_path.exists():
        # SQLite gives its -wal and -shm files the mode of the database file
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    for path in (db_path, db_path.with_name(db_path.name + "-wal"), db_path.with_name(db_path.name + "-shm")):
        if path.exists():
            _tighten(path, FILE_MODE)
