"""The scratch feature's declared interface: notable tool outcomes of every session (short-horizon), the
`recall_similar` MCP tool and `episodic scratch …`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episodic.kernel.feature_contract import Feature, SessionObserver
from episodic.scratch import SCRATCH

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import Trajectory
    from episodic.scratch.service import ScratchMemory


class ScratchObserver(SessionObserver):
    """Stores each session's notable tool outcomes; the index run sweeps the expired ones."""

    def __init__(self, scratch: ScratchMemory, memory: Memory) -> None:
        self.scratch = scratch

    def record(self, tenant_id: str, trajectory: Trajectory) -> None:
        # at first use: every CLI process reads this file
        from episodic.scratch.service import remember_outcomes

        remember_outcomes(self.scratch, tenant_id, trajectory)

    def forget(self, tenant_id: str, session_id: str) -> bool:
        from episodic.scratch.service import forget_session

        return forget_session(self.scratch, tenant_id, session_id) > 0

    def sweep(self) -> int:
        from episodic.scratch.service import sweep

        return sweep(self.scratch)


FEATURE = Feature(
    name=SCRATCH,
    settings_prefix="scratch_",
    observer=ScratchObserver,
    mcp_tools="episodic.scratch.tools:scratch_tools",
    cli="episodic.scratch.cli:register",
    commands=("scratch",),
)
