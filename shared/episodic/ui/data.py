"""What the viewer reads and writes, behind one small port: the local index (a `Memory`) or a deployed
endpoint over MCP with a token (read for browsing, write for review)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from episodic.kernel.models import CardRecord, SearchFilters, SearchHit
from episodic.ui.render import home_relative

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import ToolCall, Trajectory

MAX_LISTED = 500  # the browse page lists at most this many episodes (newest first)
LAST_EDIT_CHARS = 160  # the last edit's command, cut to one line of the "Why" panel


@dataclass
class Browse:
    """The browse page's filters (from the query string)."""

    query: str = ""
    outcome: str = ""  # "" = any; verified | unverified | failed | informational
    project: str = ""
    agent: str = ""
    distiller: str = ""
    tag: str = ""
    since: str = ""  # ISO date
    until: str = ""
    review: str = ""  # unreviewed | approved | vetoed
    group: str = "day"  # timeline buckets: day | week

    def admits(self, record: CardRecord) -> bool:
        day = record.started_at.date().isoformat() if record.started_at else ""
        tags = {t.lower() for t in record.card.tags}
        return (
            (not self.outcome or record.card.outcome.value == self.outcome)
            and (not self.project or record.project == self.project)
            and (not self.agent or record.agent == self.agent)
            and (not self.distiller or record.distiller.kind == self.distiller)
            and (not self.tag or self.tag.lower() in tags)
            and (not self.since or (bool(day) and day >= self.since))
            and (not self.until or (bool(day) and day <= self.until))
            and (not self.review or record.review_state.value == self.review)
        )


@dataclass
class SurveyView:
    """The scrubbed survey the distiller read, and the evidence its outcome was judged on."""

    survey: str = ""
    last_edit: str = ""
    evidence: list[tuple[str, bool, str]] = field(default_factory=list)  # (kind, passed, detail)
    missing: str = ""  # why there is none (no transcript on this machine, remote index)


@dataclass
class SessionLinks:
    """What the history store knows around an episode: its work items and how to resume it."""

    links: list[tuple[str, str, str, str]] = field(default_factory=list)  # (item, origin, when, url)
    resume: str = ""
    turns: int = 0
    missing: str = ""  # why there is nothing (no history record, a remote endpoint)


class ViewerSource(ABC):
    """The viewer's port: reads for browsing, review acts for the review pages."""

    label: str
    can_list: bool = True  # False: a remote endpoint browses by search only
    home: str | None = None  # this user's home folder, whose paths the pages show as `~/…`

    @abstractmethod
    def search(self, tenant_id: str, query: str, browse: Browse) -> list[SearchHit]: ...

    @abstractmethod
    def records(self, tenant_id: str) -> list[CardRecord]:
        """Every episode of the tenant (vetoed ones included: they can be restored)."""

    @abstractmethod
    def get(self, tenant_id: str, session_id: str) -> CardRecord | None: ...

    @abstractmethod
    def survey(self, record: CardRecord) -> SurveyView: ...

    @abstractmethod
    def review(
        self, tenant_id: str, session_id: str, action: str, *, reason: str, card: dict[str, Any] | None
    ) -> tuple[CardRecord, list[str]]: ...

    def session_links(self, record: CardRecord) -> SessionLinks:
        return SessionLinks(missing="work items and history are shown for the local index only")

    def resolve(self, tenant_id: str, typed: str) -> str:
        """The full session id a typed prefix stands for (the id itself where prefixes are not looked up)."""
        return typed


def _https(url: str) -> str:
    return url if url.startswith("https://") else ""


def evidence_view(trajectory: Trajectory) -> tuple[str, list[tuple[str, bool, str]]]:
    """The last edit and the evidence after it, as the outcome judge (`distill.checks`) saw them."""
    from episodic.distill.evidence import evidence_after, last_edit_position, ordered_events

    events = ordered_events(trajectory)
    position, _attempted = last_edit_position(events)
    if position is None:
        return "", []
    call = events[position].tool
    found = evidence_after(events, position)
    return edit_summary(call) if call else "", [(e.kind, e.passed, e.detail[:300]) for e in found]


def edit_summary(call: ToolCall) -> str:
    """What the last edit changed, as a reader can check it: the file an edit tool wrote, or the command
    that wrote (its first line: a heredoc's body is the file, not the command); the bare tool name never
    says which (every shell edit read `Bash`)."""
    from episodic.distill.evidence import shell_command

    path = call.file_path or str(call.input.get("file_path") or call.input.get("notebook_path") or "")
    if path:
        return f"{call.name} {path}"
    command = shell_command(call).strip()
    if command:
        shown = command.splitlines()[0]
        if shown != command or len(shown) > LAST_EDIT_CHARS:
            shown = shown[:LAST_EDIT_CHARS].rstrip() + " …"
        return f"{call.name}: {shown}"
    return f"{call.name} (names no file)"


class LocalSource(ViewerSource):
    """The local index, read and reviewed through the core."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.home = memory.settings.user_home
        self.label = f"local index {home_relative(memory.settings.db_path, self.home)}"

    def search(self, tenant_id: str, query: str, browse: Browse) -> list[SearchHit]:
        from episodic.core.search import search_traces

        filters = SearchFilters(
            include_unverified=browse.outcome != "verified",
            project=browse.project or None,
            agent=browse.agent or None,
            tags=[browse.tag] if browse.tag else [],
        )
        hits = search_traces(self.memory, tenant_id, query, k=self.memory.settings.max_k, filters=filters)
        return [h for h in hits if browse.admits(h.record)]

    def records(self, tenant_id: str) -> list[CardRecord]:
        return list(self.memory.store.iter_records(tenant_id))

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        return self.memory.store.get(tenant_id, session_id)

    def resolve(self, tenant_id: str, typed: str) -> str:
        from episodic.sessions.ids import card_session_id

        return card_session_id(self.memory, tenant_id, typed)

    def survey(self, record: CardRecord) -> SurveyView:
        from episodic.cards.agent import owned_trajectory
        from episodic.sessions.survey import render_survey

        _, trajectory = owned_trajectory(self.memory, record.tenant_id, record.session_id, record)
        if trajectory is None:
            return SurveyView(missing="the session's transcript was not found on this machine")
        edit, evidence = evidence_view(trajectory)
        survey = render_survey(trajectory, self.memory.settings.survey_token_budget)
        return SurveyView(survey=survey, last_edit=edit, evidence=evidence)

    def session_links(self, record: CardRecord) -> SessionLinks:
        from episodic.history.service import kept_history, resume_command

        history = kept_history(self.memory)
        found = history.get(record.tenant_id, record.session_id) if history is not None else None
        if history is None or found is None:
            return SessionLinks(missing="no history record for this session (run `episodic index`)")
        links = [  # only https links are clickable: a stored URL never becomes `javascript:`
            (link.item, str(link.origin), link.linked_at.date().isoformat(), _https(link.url))
            for link in history.links(record.tenant_id, session_id=record.session_id)
        ]
        return SessionLinks(links=links, resume=resume_command(found), turns=len(found.turns))

    def review(
        self, tenant_id: str, session_id: str, action: str, *, reason: str, card: dict[str, Any] | None
    ) -> tuple[CardRecord, list[str]]:
        from episodic.cards.review import review_episode

        done = review_episode(
            self.memory, tenant_id, session_id, action, reason=reason, card=card, reviewer="ui"
        )
        return done.record, done.notes


def sort_newest(records: list[CardRecord]) -> list[CardRecord]:
    epoch = datetime.min.replace(tzinfo=UTC)

    def key(record: CardRecord) -> datetime:
        stamp = record.started_at or record.indexed_at or epoch
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)

    return sorted(records, key=key, reverse=True)
