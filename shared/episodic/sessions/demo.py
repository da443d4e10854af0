"""The bundled demo corpus lives apart from a user's memory: its own tenant, and a way to remove it.

`quickstart` indexes the demo only when there is no history of the user's own, into DEMO_TENANT, which no
hook token reads; the first real sessions, or `episodic demo remove`, take it out again (also the demo
cards an earlier version indexed into the user's own tenant, found by their session ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

DEMO_TENANT = "demo"
DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"


@lru_cache(maxsize=1)
def demo_session_ids() -> frozenset[str]:
    """The demo sessions' ids (each transcript is named by its session id)."""
    return frozenset(path.stem for path in DEMO_DIR.rglob("*.jsonl"))


def remove_demo(memory: Memory, tenant: str, keep: frozenset[str] = frozenset()) -> int:
    """Delete every demo card (the demo tenant's, and demo sessions in `tenant` but those in `keep`); how
    many were deleted."""
    removed = 0
    for owner, ids in (
        (DEMO_TENANT, {record.session_id for record in memory.store.iter_records(DEMO_TENANT)}),
        (tenant, set(demo_session_ids()) - keep),
    ):
        for session_id in sorted(ids | (demo_session_ids() if owner == DEMO_TENANT else set())):
            had_card = memory.store.get(owner, session_id) is not None
            memory.forget_session(owner, session_id)  # the card and what the features kept of it
            removed += had_card
    return removed


def retire_demo(memory: Memory, tenant: str, session_keys: Iterable[str]) -> int:
    """Real sessions were indexed into `tenant`: the demo leaves (any command that indexes calls this).
    Demo sessions indexed in the same run (on purpose) stay; how many demo cards were deleted."""
    keys = set(session_keys)
    if tenant == DEMO_TENANT or not keys - demo_session_ids():
        return 0
    return remove_demo(memory, tenant, keep=frozenset(keys & demo_session_ids()))
