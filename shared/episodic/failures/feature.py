"""The failure feature's declared interface: each session's errors that it got past, indexed by signature
(an observer on the write path), and `recall_failure`, which the PostToolUseFailure hook asks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episodic.failures import FAILURES
from episodic.kernel.feature_contract import Feature, SessionObserver

if TYPE_CHECKING:
    from episodic.failures.service import FailureMemory
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import Trajectory


class FailureObserver(SessionObserver):
    """Stores each session's fixes (replacing the session's earlier ones)."""

    def __init__(self, failures: FailureMemory, memory: Memory) -> None:
        self.failures = failures

    def record(self, tenant_id: str, trajectory: Trajectory) -> None:
        # at first use: every CLI process reads this file
        from episodic.failures.service import remember_fixes

        remember_fixes(self.failures, tenant_id, trajectory)

    def forget(self, tenant_id: str, session_id: str) -> bool:
        return self.failures.store.delete_session(tenant_id, session_id) > 0


FEATURE = Feature(
    name=FAILURES,
    settings_prefix="failure_",
    observer=FailureObserver,
    mcp_tools="episodic.failures.tools:failure_tools",
)
