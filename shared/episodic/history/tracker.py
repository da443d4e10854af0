"""Trackers asked about a work item before a link is recorded (Beads: container items are refused)."""

from __future__ import annotations

import json
import shutil
import subprocess
from abc import ABC, abstractmethod

TRACKER_TIMEOUT_SECONDS = 5.0


class Tracker(ABC):
    """Says whether an item is a container (an epic) that sessions must not be linked to."""

    @abstractmethod
    def is_container(self, item: str, cwd: str) -> bool: ...


class NoTracker(Tracker):
    """Nothing to ask: every item is accepted."""

    def is_container(self, item: str, cwd: str) -> bool:
        return False


class BeadsTracker(Tracker):
    """`bd show ID --json` in the session's folder; an item it reports as an epic is a container.

    When `bd` is not installed, or cannot say (no database there, a timeout), the link is accepted: the
    tracker refuses, the absence of one does not."""

    def __init__(self, binary: str = "bd") -> None:
        self.binary = binary

    def is_container(self, item: str, cwd: str) -> bool:
        path = shutil.which(self.binary)
        if path is None:
            return False
        try:
            done = subprocess.run(
                [path, "show", item, "--json"],
                cwd=cwd or None,
                capture_output=True,
                text=True,
                timeout=TRACKER_TIMEOUT_SECONDS,
                check=False,
            )
            data = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, ValueError, subprocess.SubprocessError):
            return False
        issues = data if isinstance(data, list) else [data]
        return any(isinstance(i, dict) and str(i.get("issue_type", "")).lower() == "epic" for i in issues)
