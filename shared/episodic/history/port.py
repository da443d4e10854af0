"""The history store port: records, full-text matches and work-item links, every call tenant-scoped."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from episodic.history.models import HistoryFilters, HistoryRecord, SessionMatch, WorkLink

SUMMARY_PART = -1  # the closing and compaction summaries and the titles
META_PART = -2  # branch, files touched, subagents


def record_parts(record: HistoryRecord) -> list[tuple[int, str]]:
    """The indexed pieces of a record: one per turn (prompt + reply), the summaries, the metadata."""
    parts = [(turn.index, f"{turn.prompt}\n{turn.reply}".strip()) for turn in record.turns]
    summary = "\n".join([*record.titles, record.closing_summary, *record.compact_summaries]).strip()
    meta = "\n".join([record.git_branch, *record.files_touched, *record.subagents]).strip()
    parts += [(SUMMARY_PART, summary), (META_PART, meta)]
    return [(index, text) for index, text in parts if text]


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
    def match(self, tenant_id: str, query: str, filters: HistoryFilters, limit: int) -> list[SessionMatch]:
        """Sessions whose text matches every term of `query` (word-prefix), best first."""

    @abstractmethod
    def sessions(self, tenant_id: str, filters: HistoryFilters) -> list[HistoryRecord]:
        """The tenant's records the filters admit, oldest first."""

    @abstractmethod
    def count(self, tenant_id: str) -> int: ...

    @abstractmethod
    def add_links(self, links: Sequence[WorkLink]) -> int:
        """Append links (a confirmed link is always appended; a detected one only once per session and
        item). Returns how many were added."""

    @abstractmethod
    def links(
        self, tenant_id: str, *, session_id: str | None = None, item: str | None = None
    ) -> list[WorkLink]:
        """Links of one session or one item, newest first."""
