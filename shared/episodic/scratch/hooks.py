"""The write path's calls into scratch memory: never fatal to indexing (logged, the card path goes on)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from episodic.models import Trajectory

if TYPE_CHECKING:
    from episodic.service import Memory

log = logging.getLogger(__name__)


def remember_quietly(memory: Memory, tenant_id: str, trajectory: Trajectory) -> int:
    """Store the session's notable tool outcomes; how many records it holds (0 when off or on failure)."""
    if memory.scratch is None:
        return 0
    from episodic.scratch.service import remember_outcomes

    try:
        return len(remember_outcomes(memory.scratch, tenant_id, trajectory).records)
    except Exception as exc:  # scratch memory is a hint: a failure here never costs a card
        log.warning("scratch memory: outcomes of %s not stored: %s", trajectory.session_id, exc)
        return 0


def sweep_quietly(memory: Memory) -> int:
    if memory.scratch is None:
        return 0
    from episodic.scratch.service import sweep

    try:
        return sweep(memory.scratch)
    except Exception as exc:
        log.warning("scratch memory: sweep failed: %s", exc)
        return 0
