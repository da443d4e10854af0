"""The injections feature's declared interface: the records' store (built by the assembly: local or AWS), an
observer that reads what each receiving session did with what it was given, and `episodic injections`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from episodic.kernel.feature_contract import Feature, SessionObserver
from episodic.kernel.injection_port import INJECTIONS

if TYPE_CHECKING:
    from episodic.kernel.injection_port import InjectionStore
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import Card, Trajectory


# the tenant's common evidence, by (store, tenant): read again when the tenant's card count changes
_COMMON: dict[tuple[int, str], tuple[int, frozenset[str]]] = {}


def common_for(memory: Memory, tenant_id: str) -> frozenset[str]:
    """Terms, files and checks too many of the tenant's cards name to count as a use (`uses.common_evidence`)."""
    from episodic.injections.uses import common_evidence

    count = memory.store.count(tenant_id)
    key = (id(memory.store), tenant_id)
    cached = _COMMON.get(key)
    if cached is None or cached[0] != count:
        cached = (count, common_evidence(r.card for r in memory.store.iter_records(tenant_id)))
        _COMMON[key] = cached
    return cached[1]


class InjectionObserver(SessionObserver):
    """A session that was given memory: each record's use, read again whenever the session grows."""

    def __init__(self, store: InjectionStore, memory: Memory) -> None:
        self.store = store
        self.memory = memory

    def record(self, tenant_id: str, trajectory: Trajectory) -> None:
        records = self.store.of_session(tenant_id, trajectory.session_id)
        if not records:
            return
        from episodic.injections.uses import read_session

        def card_of(card_id: str) -> Card | None:
            found = self.memory.store.get(tenant_id, card_id)
            return found.card if found is not None else None

        uses = read_session(records, trajectory, card_of, common=common_for(self.memory, tenant_id))
        self.store.set_uses(tenant_id, trajectory.session_id, uses)

    def forget(self, tenant_id: str, session_id: str) -> bool:
        return self.store.delete_session(tenant_id, session_id) > 0

    def sweep(self) -> int:
        settings = self.memory.settings
        older = datetime.now(UTC) - timedelta(days=settings.injections_keep_days)
        return self.store.expire(older, settings.injections_keep_per_tenant)


FEATURE = Feature(
    name=INJECTIONS,
    settings_prefix="injections_",
    observer=InjectionObserver,
    cli="episodic.injections.cli:register",
    commands=("injections",),
)
