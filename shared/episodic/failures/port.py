"""The failure store port: fixes by error signature, tenant-scoped. The rules live here (template methods):
the tenant on every call, a session's records replaced as a whole, another tenant's record never handed
out. Adapters (SQLite) only move data."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from episodic.failures.models import FailureFix
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import check_tenant


class FailureStore(ABC):
    """Fixes of every tenant; each call names its tenant (none: a TenantError)."""

    # ------------------------------------------------------------ data access (adapters)

    @abstractmethod
    def _replace_session(self, tenant_id: str, session_id: str, fixes: Sequence[FailureFix]) -> int:
        """Drop the session's records and store `fixes` in one transaction; how many were stored."""

    @abstractmethod
    def _by_key(self, tenant_id: str, key: str, before: datetime | None, limit: int) -> list[FailureFix]:
        """The tenant's fixes of `key` (failed before `before` when given), latest pass first."""

    @abstractmethod
    def delete_session(self, tenant_id: str, session_id: str) -> int: ...

    @abstractmethod
    def count(self, tenant_id: str | None = None) -> int: ...

    # ------------------------------------------------------------ the rules

    def replace_session(self, tenant_id: str, session_id: str, fixes: Sequence[FailureFix]) -> int:
        tenant = check_tenant(tenant_id)
        if any(f.tenant_id != tenant or f.session_id != session_id for f in fixes):
            raise InvalidArgumentError("every fix must belong to the session and tenant it is stored under")
        return self._replace_session(tenant, session_id, fixes)

    def fixes_of(
        self, tenant_id: str, key: str, before: datetime | None = None, limit: int = 20
    ) -> list[FailureFix]:
        tenant = check_tenant(tenant_id)
        if limit < 1:
            raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
        if before is not None and before.tzinfo is None:
            raise InvalidArgumentError("before must carry a time zone")
        found = self._by_key(tenant, key, before, limit)
        return [f for f in found if f.tenant_id == tenant and f.key == key][:limit]  # defence in depth
