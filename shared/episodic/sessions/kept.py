"""Sessions beyond the agent's cleanup: each loaded session's scrubbed trajectory is kept (per tenant, in
`Memory.kept`), read back once the agent deleted its transcript, and held under the size cap.

Claude Code deletes transcripts older than `cleanupPeriodDays` (30 by default); with the trajectory kept, a
card can still be re-distilled (`index --upgrade`), its survey rendered (`inspect --render`) and its
transcript shown in the viewer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from episodic.kernel.memory import Memory
from episodic.kernel.models import NotEpisode, SessionSource, Trajectory

log = logging.getLogger(__name__)


def keep_trajectory(memory: Memory, tenant_id: str, loaded: Trajectory) -> None:
    """Keep the scrubbed trajectory beyond the agent's cleanup (never fatal: retried next run)."""
    if memory.kept is None:
        return
    try:
        memory.kept.keep(tenant_id, loaded)
    except Exception:  # a full disk costs the kept copy, never the card
        log.warning("keeping the trajectory of %s failed", loaded.session_id, exc_info=True)


def load_session(memory: Memory, tenant_id: str, source: SessionSource) -> Trajectory | NotEpisode:
    """The session from its files; from the tenant's kept trajectory once the agent deleted them."""
    if memory.kept is not None and not Path(source.main_path).exists():
        kept = memory.kept.get(tenant_id, source.session_key)
        if kept is not None:  # the scope rules of today apply to it as to a file
            return memory.source.admit(kept)
    return memory.source.load(source)


def evict_kept(memory: Memory, tenant_id: str) -> int:
    """Once per index run: the tenant's kept trajectories back under their cap (the oldest go)."""
    if memory.kept is None:
        return 0
    try:
        return memory.kept.evict(tenant_id)
    except Exception:  # the next run tries again
        log.warning("evicting kept trajectories failed", exc_info=True)
        return 0


def kept_sources(
    memory: Memory, tenant_id: str, session_ids: Iterable[str], paths: Sequence[str] | None
) -> list[SessionSource]:
    """The sources of those of `session_ids` whose transcript is gone but whose trajectory is kept (under
    `paths` when given): `load_session` reads them back from the kept copy."""
    if memory.kept is None:
        return []
    roots = [Path(p).expanduser().absolute() for p in paths or ()]
    found = []
    for session_id in session_ids:
        if not memory.kept.has(tenant_id, session_id):
            continue
        kept = memory.kept.get(tenant_id, session_id)
        if kept is None or Path(kept.source.main_path).exists():
            continue  # a transcript still there is discovered where it is
        where = Path(kept.source.main_path)
        if roots and not any(where == root or root in where.parents for root in roots):
            continue
        found.append(kept.source.model_copy(update={"session_key": session_id}))
    return found
