"""The week's sessions from the history store (its session records), with the transcripts as fallback.

A history record holds what a digest needs (scrubbed prompts in full, files touched, subagents, the
closing summary), so a week is read without parsing a transcript. A card whose session has no history
record yet (indexed before history existed, history switched off for a while) is read from its
transcript by the fallback source, as is every deep extraction (REM needs the whole trajectory).
"""

from __future__ import annotations

from datetime import datetime

from episodic.dream.source import (
    CLOSING_CHARS,
    MAX_PROMPTS,
    PROMPT_CHARS,
    SessionDigest,
    WeekSource,
    cut,
    earliest_in,
    records_in,
)
from episodic.history.models import HistoryRecord
from episodic.history.port import HistoryStore
from episodic.kernel.models import CardRecord, Trajectory
from episodic.kernel.ports import VectorStore


def digest_from_history(record: CardRecord, history: HistoryRecord) -> SessionDigest:
    return SessionDigest(
        record=record,
        prompts=[cut(p, PROMPT_CHARS) for p in history.prompts[:MAX_PROMPTS]],
        files_touched=list(history.files_touched),
        subagents=list(history.subagents),
        closing_summary=cut(history.closing_summary, CLOSING_CHARS),
        titles=list(history.titles[:3]),
        raw_bytes=record.source_bytes,
        transcript_found=True,  # the history record was made from the transcript, scrubbed alike
    )


class HistoryWeekSource(WeekSource):
    """Cards from the index (only read), each digested from its history record; `fallback` for the rest."""

    def __init__(self, store: VectorStore, history: HistoryStore, fallback: WeekSource) -> None:
        self.store = store
        self.history = history
        self.fallback = fallback
        self.from_history = 0  # digests read from history records (the rest came from transcripts)

    def sessions(self, tenant_id: str, since: datetime, until: datetime) -> list[SessionDigest]:
        digests: list[SessionDigest] = []
        for record in records_in(self.store, tenant_id, since, until):
            history = self.history.get(tenant_id, record.session_id)
            if history is not None and history.source_sha256 == record.source_sha256:
                digests.append(digest_from_history(record, history))
                self.from_history += 1
            else:  # no record, or one of an older version of the session: the transcript says more
                digests.append(self.fallback.digest(record))
        return digests

    def earliest(self, tenant_id: str) -> datetime | None:
        return earliest_in(self.store, tenant_id)

    def deep_detail(self, digest: SessionDigest) -> Trajectory | None:
        return self.fallback.deep_detail(digest)
