"""`episodic index --upgrade`: re-distil cards that a lesser distiller wrote, newest first, within a cap.

Selection only: the chosen sessions go through `index_sessions`, so a failed distil keeps the old card
and is recorded for a retry, and a card of a better distiller (e.g. the agent's own) is never replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from episodic.cards.write import distiller_rank
from episodic.kernel.errors import ConfigError
from episodic.kernel.memory import Memory
from episodic.kernel.models import CardRecord, SessionSource
from episodic.sessions.kept import kept_sources

DEFAULT_UPGRADE_LIMIT = 50  # ~12 min with Claude Code at the planning 30 s a session and concurrency 2
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass
class UpgradePlan:
    sources: list[SessionSource]
    eligible: int  # sessions whose card the configured distiller would improve


def _when(record: CardRecord) -> datetime:
    moment = record.ended_at or record.started_at or record.indexed_at
    if moment is None:
        return _OLDEST
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def plan_upgrade(memory: Memory, tenant_id: str, paths: Sequence[str] | None, limit: int) -> UpgradePlan:
    """The sessions to re-distil: their card ranks below the configured distiller's; newest first."""
    if not memory.distiller.uses_survey:
        raise ConfigError(
            f"--upgrade re-distils with an LLM distiller, but the configured one is {memory.distiller.info.id}: "
            "pass --distiller claude-code|codex|gemini (or save it: `episodic setup claude-code --distiller "
            "claude-code --write`, `setup codex --distiller codex --write`, `setup gemini --distiller gemini --write`)"
        )
    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    current = distiller_rank(memory.distiller.info)
    lesser = {
        r.session_id: r for r in memory.store.iter_records(tenant_id) if distiller_rank(r.distiller) < current
    }
    sources = [s for s in memory.source.discover(paths) if s.session_key in lesser]
    found = {s.session_key for s in sources}
    # a session the agent deleted is re-distilled from its kept trajectory
    sources += kept_sources(memory, tenant_id, sorted(set(lesser) - found), paths)
    sources.sort(key=lambda s: _when(lesser[s.session_key]), reverse=True)
    return UpgradePlan(sources=sources[:limit], eligible=len(sources))
