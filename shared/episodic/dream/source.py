"""The week's sessions: the `WeekSource` port and its adapter over the index and the transcripts.

The port is the seam to a session history store: anything that can list the sessions started in
[since, until) with their card, scrubbed prompts, files touched, subagents and closing summary can feed
a dream. `IndexWeekSource` reads the index's cards (read-only) and re-parses each session's transcript
through the ordinary `TranscriptSource` (so prompts are scrubbed exactly as for distilling).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from episodic.kernel.models import CardRecord, ReviewState, SessionSource, Trajectory
from episodic.kernel.ports import TranscriptSource, VectorStore

PROMPT_CHARS = 600  # each prompt in a digest (the survey is an outline; the transcript stays citable)
MAX_PROMPTS = 40
CLOSING_CHARS = 1200


class SessionDigest(BaseModel):
    """One session as a dream sees it: its card plus what the transcript says around it (all scrubbed)."""

    record: CardRecord
    prompts: list[str] = Field(default_factory=list)
    files_touched: list[str] = Field(default_factory=list)
    subagents: list[str] = Field(default_factory=list)
    closing_summary: str = ""
    titles: list[str] = Field(default_factory=list)
    raw_bytes: int = 0  # the transcript bytes this digest stands for
    transcript_found: bool = False

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def started_at(self) -> datetime | None:
        return self.record.started_at or self.record.ended_at


class WeekSource(ABC):
    """Sessions of one tenant that started in [since, until), oldest first."""

    @abstractmethod
    def sessions(self, tenant_id: str, since: datetime, until: datetime) -> list[SessionDigest]: ...

    @abstractmethod
    def earliest(self, tenant_id: str) -> datetime | None:
        """When the tenant's first session started (where a first dream begins); None when there is none."""

    def deep_detail(self, digest: SessionDigest) -> Trajectory | None:
        """The full scrubbed trajectory of one session (REM's deep extraction); None when unavailable."""
        return None

    def digest(self, record: CardRecord) -> SessionDigest:
        """One card's digest as this source reads it (here: the card alone)."""
        return digest_of(record, None)


def cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def digest_of(record: CardRecord, trajectory: Trajectory | None) -> SessionDigest:
    if trajectory is None:
        return SessionDigest(record=record, raw_bytes=record.source_bytes)
    files = list(dict.fromkeys([*trajectory.files_edited, *trajectory.files_read]))
    return SessionDigest(
        record=record,
        prompts=[cut(p, PROMPT_CHARS) for p in trajectory.prompts[:MAX_PROMPTS]],
        files_touched=files,
        subagents=list(trajectory.subagents),
        closing_summary=cut(trajectory.closing_summary, CLOSING_CHARS),
        titles=list(trajectory.titles[:3]),
        raw_bytes=trajectory.source.total_bytes or record.source_bytes,
        transcript_found=True,
    )


def records_in(store: VectorStore, tenant_id: str, since: datetime, until: datetime) -> list[CardRecord]:
    """The tenant's cards of sessions started in [since, until), oldest first (the index is only read)."""
    chosen = [
        r
        for r in store.iter_records(tenant_id)
        if (when := r.started_at or r.ended_at) is not None
        and since <= when < until
        and r.review_state
        is not ReviewState.VETOED  # a vetoed card never reaches an agent (episodic.cards.review)
    ]
    return sorted(chosen, key=lambda r: (r.started_at or r.ended_at, r.session_id))  # type: ignore[arg-type,return-value]


def earliest_in(store: VectorStore, tenant_id: str) -> datetime | None:
    starts = [w for r in store.iter_records(tenant_id) if (w := r.started_at or r.ended_at)]
    return min(starts) if starts else None


class IndexWeekSource(WeekSource):
    """Cards from the index (never written to) and their transcripts, found under `paths` (None: the
    source's default roots) by session id."""

    def __init__(
        self, store: VectorStore, transcripts: TranscriptSource, paths: Sequence[str] | None = None
    ) -> None:
        self.store = store
        self.transcripts = transcripts
        self.paths = list(paths) if paths else None
        self._sources: dict[str, SessionSource] | None = None

    def _by_session(self) -> dict[str, SessionSource]:
        if self._sources is None:
            found: dict[str, SessionSource] = {}
            for source in self.transcripts.discover(self.paths):
                found.setdefault(source.session_key, source)
                found.setdefault(Path(source.main_path).stem, source)
            self._sources = found
        return self._sources

    def _trajectory(self, session_id: str) -> Trajectory | None:
        """Parsed afresh each time: a week of full trajectories is not kept in memory."""
        source = self._by_session().get(session_id)
        loaded = self.transcripts.load(source) if source is not None else None
        return loaded if isinstance(loaded, Trajectory) and loaded.session_id == session_id else None

    def sessions(self, tenant_id: str, since: datetime, until: datetime) -> list[SessionDigest]:
        return [self.digest(r) for r in records_in(self.store, tenant_id, since, until)]

    def digest(self, record: CardRecord) -> SessionDigest:
        return digest_of(record, self._trajectory(record.session_id))

    def earliest(self, tenant_id: str) -> datetime | None:
        return earliest_in(self.store, tenant_id)

    def deep_detail(self, digest: SessionDigest) -> Trajectory | None:
        return self._trajectory(digest.session_id)
