"""The scratch memory assembled: a store, the embedder (the cards' own) and the settings; and its write path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from episodic.kernel.models import Trajectory
from episodic.kernel.ports import Embedder
from episodic.kernel.settings import Settings
from episodic.scratch import SCRATCH  # the feature's name
from episodic.scratch.port import ScratchManifest, ScratchStore
from episodic.scrub import Scrubber

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.scratch.extract import Extraction

# a record a little ahead of this clock may come from a machine whose clock runs fast: not swept
CLOCK_SKEW = timedelta(days=1)


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class ScratchMemory:
    settings: Settings
    store: ScratchStore
    embedder: Embedder
    scrubber: Scrubber
    clock: Callable[[], datetime] = field(default=_utcnow)

    @property
    def manifest(self) -> ScratchManifest:
        return ScratchManifest(embedder_id=self.embedder.id, dimension=self.embedder.dimension)

    @property
    def min_similarity(self) -> float:
        configured = self.settings.scratch_min_similarity
        return self.embedder.default_min_similarity if configured is None else configured

    def horizon(self, now: datetime | None = None) -> datetime:
        """Records created before this are expired: never returned, deleted by the sweep."""
        return (now or self.clock()) - timedelta(days=self.settings.scratch_ttl_days)


def scratch_of(memory: Memory) -> ScratchMemory | None:
    """The memory's scratch memory (the feature's part), None when it is off."""
    part = memory.part(SCRATCH)
    return part if isinstance(part, ScratchMemory) else None


def remember_outcomes(scratch: ScratchMemory, tenant_id: str, trajectory: Trajectory) -> Extraction:
    """Extract the session's outcome records and store the unexpired, unseen ones (embedded once each)."""
    from episodic.scratch.extract import extract_outcomes  # the write path only: recall never extracts

    extraction = extract_outcomes(
        trajectory,
        tenant_id,
        scratch.scrubber,
        max_records=scratch.settings.scratch_max_per_session,
        now=scratch.clock(),
    )
    horizon = scratch.horizon()
    fresh = [r for r in extraction.records if r.created_at >= horizon]
    known = scratch.store.known_ids(tenant_id, [r.record_id for r in fresh]) if fresh else set()
    new = [r for r in fresh if r.record_id not in known]
    if new:
        vectors = scratch.embedder.embed([r.summary for r in new])
        scratch.store.add(new, vectors, scratch.manifest)
    return extraction


def sweep(scratch: ScratchMemory) -> int:
    """Delete every expired record, and any dated in the future (stored before such times were clamped);
    how many went (run by `index`, the cron and `episodic scratch sweep`)."""
    now = scratch.clock()
    return scratch.store.sweep(scratch.horizon(now), after=now + CLOCK_SKEW)


def forget_session(scratch: ScratchMemory, tenant_id: str, session_id: str) -> int:
    return scratch.store.delete_session(tenant_id, session_id)
