"""The injection record and its store's port: each card or pointer memory gave a session, and later what that
session did with it. The read tools (the core's search_traces, the failure feature's recall_failure) record
through this port; the injections feature owns the adapters and reads the receiving session.

The rules live here (template methods): the tenant on every call, another tenant's record never handed out,
no prompt text (a hash only). Adapters (SQLite, DynamoDB) only move data.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import check_tenant

INJECTIONS = "injections"  # the feature's name: its part in `Memory.parts`
Tier = Literal["card", "pointer", "fix"]  # fix: the failure hook's one-entry answer
Source = Literal["prompt_hook", "failure_hook", "search_traces"]
Use = Literal["opened", "cited", "acted", "ignored"]
USES: tuple[Use, ...] = ("opened", "cited", "acted", "ignored")


def prompt_hash(text: str) -> str:
    """What a record keeps of the prompt (or the failing command): a hash, never the words."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class InjectionRecord(BaseModel):
    """One card or pointer given to one session (the receiving session), and what it did with it."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    session_id: str = Field(min_length=1, max_length=200)  # the receiving session
    agent: str = ""  # claude-code | codex | gemini, as the hook saw it ("" unknown)
    card_id: str = Field(min_length=1, max_length=200)  # the session id of the card given
    tier: Tier
    source: Source
    prompt_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    chars: int = Field(ge=0)  # characters of injected text (≈ 4 per token)
    at: datetime
    use: Use | None = None  # None until the receiving session is read
    use_detail: str = ""  # which rule matched and on what (a command, a file name, a term)

    @property
    def record_id(self) -> str:
        """One record per (session, card, tier, moment): recording the same giving twice keeps one."""
        key = f"{self.session_id}\x00{self.card_id}\x00{self.tier}\x00{self.at.isoformat()}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class CardUse:
    """What earlier sessions did with one card: the steering rules' evidence."""

    given: int = 0  # records of it (every tier)
    pointers: int = 0  # of them as a pointer
    used: int = 0  # read as opened, cited or acted
    opened: int = 0
    read: int = 0  # records whose session has been read (a use decided)


def tally(records: Sequence[InjectionRecord]) -> dict[str, CardUse]:
    """Each card's use, over records."""
    counts: dict[str, list[int]] = {}
    for r in records:
        row = counts.setdefault(r.card_id, [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += r.tier == "pointer"
        row[2] += r.use in ("opened", "cited", "acted")
        row[3] += r.use == "opened"
        row[4] += r.use is not None
    return {card: CardUse(*row) for card, row in counts.items()}


class InjectionStore(ABC):
    """Injection records of every tenant; each call names its tenant (none: a TenantError)."""

    # ------------------------------------------------------------ data access (adapters)

    @abstractmethod
    def _add(self, tenant_id: str, records: Sequence[InjectionRecord]) -> int: ...

    @abstractmethod
    def _of_session(self, tenant_id: str, session_id: str) -> list[InjectionRecord]:
        """The session's records, oldest first."""

    @abstractmethod
    def _set_uses(self, tenant_id: str, session_id: str, uses: Mapping[str, tuple[Use, str, str]]) -> int:
        """Write (use, detail, agent) on the session's records by record id; how many were updated."""

    @abstractmethod
    def _since(self, tenant_id: str, since: datetime | None, limit: int) -> list[InjectionRecord]:
        """The tenant's records at or after `since`, newest first, at most `limit`."""

    @abstractmethod
    def expire(self, older_than: datetime, keep_per_tenant: int) -> int:
        """Retention, over every tenant: drop records before `older_than`, then each tenant's oldest beyond
        `keep_per_tenant`; how many went."""

    @abstractmethod
    def delete_session(self, tenant_id: str, session_id: str) -> int: ...

    @abstractmethod
    def count(self, tenant_id: str | None = None) -> int: ...

    # ------------------------------------------------------------ the rules

    def add(self, tenant_id: str, records: Sequence[InjectionRecord]) -> int:
        tenant = check_tenant(tenant_id)
        if any(r.tenant_id != tenant for r in records):
            raise InvalidArgumentError("every injection record must belong to the tenant it is stored under")
        if any(r.at.tzinfo is None for r in records):
            raise InvalidArgumentError("an injection record's time must carry a time zone")
        return self._add(tenant, records) if records else 0

    def of_session(self, tenant_id: str, session_id: str) -> list[InjectionRecord]:
        tenant = check_tenant(tenant_id)
        return [r for r in self._of_session(tenant, session_id) if r.tenant_id == tenant]  # defence in depth

    def given(self, tenant_id: str, session_id: str) -> dict[str, set[str]]:
        """Each card id already given to the session, with the tiers it was given at."""
        found: dict[str, set[str]] = {}
        for record in self.of_session(tenant_id, session_id):
            found.setdefault(record.card_id, set()).add(record.tier)
        return found

    def set_uses(self, tenant_id: str, session_id: str, uses: Mapping[str, tuple[Use, str, str]]) -> int:
        tenant = check_tenant(tenant_id)
        return self._set_uses(tenant, session_id, uses) if uses else 0

    def since(
        self, tenant_id: str, since: datetime | None = None, limit: int = 100_000
    ) -> list[InjectionRecord]:
        tenant = check_tenant(tenant_id)
        if limit < 1:
            raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
        if since is not None and since.tzinfo is None:
            raise InvalidArgumentError("since must carry a time zone")
        return [r for r in self._since(tenant, since, limit) if r.tenant_id == tenant]

    def uses_of_cards(self, tenant_id: str, card_ids: Sequence[str]) -> dict[str, CardUse]:
        """What earlier sessions did with these cards (an adapter may answer it with one query)."""
        wanted = set(card_ids)
        return {k: v for k, v in tally(self.since(tenant_id)).items() if k in wanted}
