"""The sessions Claude Code will delete soon that nothing here has kept yet.

Claude Code deletes, when it starts, every session file whose modification time is older than
`cleanupPeriodDays` (its `settings.json`, 30 days when unset). A session with no card and no kept
trajectory is lost with its file: `inspect` and `doctor` say how many will go within a week.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from episodic.kernel.models import NotEpisode, SessionSource
from episodic.kernel.ports import TranscriptSource

CLAUDE_CODE = "claude-code"
DEFAULT_CLEANUP_DAYS = 30  # Claude Code's default for `cleanupPeriodDays`
CLEANUP_SETTING = "cleanupPeriodDays"
HORIZON_DAYS = 7  # "within a week"
_DAY = 86400.0


def cleanup_days(config_dir: Path) -> int:
    """The `cleanupPeriodDays` of one Claude Code config folder (its default when unset or unreadable)."""
    try:
        data = json.loads((config_dir / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_CLEANUP_DAYS
    value = data.get(CLEANUP_SETTING) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return DEFAULT_CLEANUP_DAYS
    return int(value)


@dataclass
class CleanupRisk:
    """Claude Code sessions its cleanup deletes within `HORIZON_DAYS` that have no card nor kept copy."""

    periods: dict[str, int] = field(default_factory=dict)  # config folder -> cleanupPeriodDays
    sessions: int = 0  # Claude Code sessions seen
    due: int = 0  # of them, deleted within the horizon
    unindexed: list[str] = field(default_factory=list)  # of those, episodes neither indexed nor kept

    def as_dict(self) -> dict[str, object]:
        return {
            "cleanup_period_days": self.periods,
            "deleted_within_week": self.due,
            "deleted_within_week_unindexed": len(self.unindexed),
        }

    def sentence(self) -> str:
        days = sorted(set(self.periods.values())) or [DEFAULT_CLEANUP_DAYS]
        period = "/".join(str(d) for d in days)
        return (
            f"Claude Code deletes sessions after {period} days (cleanupPeriodDays): {self.due} will go within "
            f"a week, {len(self.unindexed)} of them not indexed yet"
        )


def _root_of(path: str, roots: list[Path]) -> Path | None:
    where = Path(path)
    return next((root for root in roots if root in where.parents), None)


def cleanup_risk(
    source: TranscriptSource,
    sessions: Iterable[SessionSource],
    roots: Iterable[Path],
    *,
    indexed: Callable[[str], bool],
    now: float,
    load: Callable[[SessionSource], object] | None = None,
) -> CleanupRisk:
    """The Claude Code sessions under `roots` (config folders) that go within a week, and which of them
    are episodes not `indexed` (no card, no kept trajectory: only those are parsed)."""
    folders = [root.expanduser().absolute() for root in roots]
    risk = CleanupRisk(periods={str(root): cleanup_days(root) for root in folders})
    loader = load or source.load
    for session in sessions:
        root = _root_of(session.main_path, folders) if session.agent == CLAUDE_CODE else None
        if root is None:
            continue
        risk.sessions += 1
        if session.mtime + risk.periods[str(root)] * _DAY >= now + HORIZON_DAYS * _DAY:
            continue
        risk.due += 1
        key = session.session_key
        if indexed(key):
            continue
        loaded = loader(session)
        if not isinstance(loaded, NotEpisode):  # an empty or out-of-scope session loses nothing
            risk.unindexed.append(key)
    return risk
