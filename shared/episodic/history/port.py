"""The history store port: records, full-text matches and work-item links, every call tenant-scoped."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from episodic.history.models import HistoryFilters, HistoryRecord, SessionMatch, WorkLink


class HistoryStore(ABC):
    """Per-session history records and links. Implementations enforce the tenant on every call."""

    @abstractmethod
    def stored_sha(self, tenant_id: str, session_id: str) -> str | None:
        """The content hash of the stored record (None when there is none): the idempotency check."""

    @abstractmethod
    def put(self, record: HistoryRecord) -> bool:
        """Store (or replace) the session's record; False when the same content was already stored."""

    @abstractmethod
    def get(self, tenant_id: str, session_id: str) -> HistoryRecord | None: ...

    @abstractmethod
    def match(
        self, tenant_id: str, query: str, filters: HistoryFilters, limit: int, *, some_words: bool = False
    ) -> list[SessionMatch]:
        """Sessions whose text holds every word of `query` (lightly stemmed, as a word prefix), best first;
        `some_words`: any of them, those holding more words first (`missing` names the others)."""

    @abstractmethod
    def sessions(self, tenant_id: str, filters: HistoryFilters) -> list[HistoryRecord]:
        """The tenant's records the filters admit, oldest first."""

    @abstractmethod
    def count(self, tenant_id: str) -> int: ...

    def session_ids_starting(self, tenant_id: str, prefix: str, limit: int = 20) -> list[str]:
        """The tenant's session ids starting with `prefix` (at most `limit`, sorted)."""
        found = sorted(
            r.session_id
            for r in self.sessions(tenant_id, HistoryFilters())
            if r.session_id.startswith(prefix)
        )
        return found[:limit]

    @abstractmethod
    def forget(self, tenant_id: str, session_id: str) -> bool:
        """Delete the session's record, its full text and its links (a scope rule now excludes it);
        False when nothing was stored."""

    @abstractmethod
    def add_links(self, links: Sequence[WorkLink]) -> int:
        """Append links (a confirmed link is always appended; a detected one only once per session and
        item). Returns how many were added."""

    @abstractmethod
    def links(
        self, tenant_id: str, *, session_id: str | None = None, item: str | None = None
    ) -> list[WorkLink]:
        """Links of one session or one item, newest first."""
