"""The holdout decision and the experiment log (stdlib only: the prompt hook imports it).

A session is wholly "with" or "without" memory: the arm is a hash of its id, so every prompt of a session
gets the same answer without any state. Only prompts where memory *would* be injected are logged, with the
ids and similarities of the episodes (never the prompt, the cards or the working directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

Arm = Literal["with", "without"]
ARMS: tuple[Arm, Arm] = ("with", "without")
DEFAULT_HOLDOUT = 0.10
MAX_HOLDOUT = 0.5  # more than half the sessions without memory is not a holdout
LOG_DIR = "experiment"
LOG_FILE = "log.jsonl"
LOG_MAX_BYTES = 20_000_000  # one older file is kept; the report reads both
SALT = "episodic-holdout-v1"  # a new salt would reshuffle every session: never change it in place
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def arm_for(session_id: str, holdout: float) -> Arm:
    """`without` for a `holdout` share of sessions: the first 8 bytes of sha256(salt:id) as a fraction."""
    digest = hashlib.sha256(f"{SALT}:{session_id}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return "without" if fraction < holdout else "with"


def _flag(value: Any, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in ("false", "0", "no", "off")


def holdout_share(setting: Callable[[str, Any], Any]) -> float | None:
    """The configured share, or None when the experiment is off (a bad value reads as the default)."""
    if not _flag(setting("experiment_enabled", True), True):
        return None
    try:
        share = float(setting("experiment_holdout", DEFAULT_HOLDOUT))
    except (TypeError, ValueError):
        share = DEFAULT_HOLDOUT
    if not 0.0 <= share <= MAX_HOLDOUT:
        share = DEFAULT_HOLDOUT
    return share


def valid_id(value: Any) -> str | None:
    return value if isinstance(value, str) and _ID_RE.match(value) else None


def log_path(home: Path) -> Path:
    return home / LOG_DIR / LOG_FILE


def entry(
    session_id: str, arm: Arm, share: float, hits: Sequence[Mapping[str, Any]], scratch: bool = False
) -> dict[str, Any]:
    """What one logged prompt records: ids and similarities only (and whether prior attempts would go in)."""
    episodes = []
    for hit in hits:
        episode_id = valid_id(hit.get("session_id"))
        similarity = hit.get("similarity")
        episodes.append(
            {
                "session_id": episode_id or "?",
                "similarity": round(float(similarity), 4) if isinstance(similarity, int | float) else None,
            }
        )
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session_id": session_id,
        "arm": arm,
        "holdout": share,
        "would_inject": episodes,
        "would_inject_prior_attempts": scratch,
    }


def append(home: Path, record: Mapping[str, Any]) -> None:
    """One line, appended (small writes with O_APPEND do not interleave between concurrent hooks)."""
    path = log_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
        os.replace(path, path.with_suffix(".jsonl.1"))
    line = json.dumps(record, separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def decide(
    payload: Mapping[str, Any],
    hits: Sequence[Mapping[str, Any]],
    setting: Callable[[str, Any], Any],
    home: Path,
    scratch: bool = False,
) -> Arm | None:
    """The hook's call-out once memory would be injected: the session's arm, logged; None when the
    experiment is off or the session has no usable id (then memory is injected and nothing is logged).
    `scratch`: a prior-attempts block (scratch memory) would be injected; it is withheld alike."""
    share = holdout_share(setting)
    session_id = valid_id(payload.get("session_id"))
    if share is None or session_id is None or not (hits or scratch):
        return None
    arm = arm_for(session_id, share)
    append(home, entry(session_id, arm, share, hits, scratch))
    return arm


def read_log(home: Path) -> Iterator[dict[str, Any]]:
    """Every well-formed entry, the rotated file first; broken lines are skipped."""
    current = log_path(home)
    for path in (current.with_suffix(".jsonl.1"), current):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and valid_id(data.get("session_id")) and data.get("arm") in ARMS:
                yield data
