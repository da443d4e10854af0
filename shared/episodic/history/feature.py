"""The history feature's declared interface: a record of every session (prompts, tools, links), its MCP
tools and its commands (`history`, `link`, `resume`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episodic.history import HISTORY
from episodic.kernel.feature_contract import Feature, SessionObserver

if TYPE_CHECKING:
    from episodic.history.port import HistoryStore
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import Trajectory


class HistoryObserver(SessionObserver):
    """Every loaded session's history record, before its card (an unchanged card needs it too)."""

    def __init__(self, store: HistoryStore, memory: Memory) -> None:
        self.store = store
        self.memory = memory

    def record(self, tenant_id: str, trajectory: Trajectory) -> None:
        # at first use: every CLI process reads this file
        from episodic.history.service import store_history
        from episodic.scrub import Scrubber

        # the hash is stored only on success: a failed write is retried next run
        store_history(self.store, Scrubber.from_settings(self.memory.settings), tenant_id, trajectory)

    def forget(self, tenant_id: str, session_id: str) -> bool:
        return self.store.forget(tenant_id, session_id)


FEATURE = Feature(
    name=HISTORY,
    settings_prefix="history_",
    observer=HistoryObserver,
    mcp_tools="episodic.history.tools:history_tools",
    cli="episodic.history.cli:register",
    commands=("history", "link", "resume"),
)
