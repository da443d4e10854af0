"""The history core every face calls: the write step of ingestion, session search, links, resume, and
`sessions_in_range` (a date range's sessions with their history records, cards and links)."""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from episodic.history import HISTORY  # the feature's name
from episodic.history.links import detected_links, parse_item
from episodic.history.models import HistoryFilters, HistoryRecord, SessionMatch, WorkLink
from episodic.history.port import HistoryStore
from episodic.history.tracker import NoTracker, Tracker
from episodic.kernel.errors import ConfigError, InvalidArgumentError, NotFoundError
from episodic.kernel.models import CardRecord, ReviewState, check_tenant
from episodic.scrub import Scrubber
from episodic.sessions.ids import AmbiguousSessionError, not_found, session_id_in

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.kernel.models import Trajectory

log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 500
MAX_LINK_FIELD_CHARS = 1000  # a link's cwd or terminal, as written by the caller
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def kept_history(memory: Memory) -> HistoryStore | None:
    """The memory's history store (the feature's part), None when history is off."""
    store = memory.part(HISTORY)
    return store if isinstance(store, HistoryStore) else None


def history_of(memory: Memory) -> HistoryStore:
    store = kept_history(memory)
    if store is None:
        raise ConfigError("this memory has no history store (EPISODIC_HISTORY_TABLE unset in AWS)")
    return store


# ---------------------------------------------------------------- the write step


def record_history(memory: Memory, tenant_id: str, trajectory: Trajectory) -> bool:
    """Store the session's history record and its detected links; False when unchanged (same hash), when
    the memory keeps no history, or when the write failed (logged; the hash is not stored, so the next
    run retries it). Ingestion calls it for every loaded session (`HistoryObserver`): a card never waits."""
    store = kept_history(memory)
    if store is None:
        return False
    try:
        return store_history(store, Scrubber.from_settings(memory.settings), tenant_id, trajectory)
    except Exception:  # the card's write path goes on; the history is retried next run
        log.warning("history record of %s not stored", trajectory.session_id, exc_info=True)
        return False


def store_history(store: HistoryStore, scrubber: Scrubber, tenant_id: str, trajectory: Trajectory) -> bool:
    """The write step itself (raises on a store failure); False when the stored record has this hash."""
    if store.stored_sha(tenant_id, trajectory.session_id) == trajectory.source_sha256:
        return False
    # the write path only: it pulls in the distiller's steps
    from episodic.history.extract import history_record

    record = history_record(trajectory, tenant_id, scrubber)
    if not store.put(record):
        return False
    commands = [call.command for call in trajectory.tool_calls if call.command]
    store.add_links(detected_links(record, commands, record.started_at or datetime.now(UTC)))
    return True


# ---------------------------------------------------------------- reads


@dataclass
class SessionSummary:
    """A session as every history result shows it: metadata, its card's problem and outcome, resume."""

    record: HistoryRecord
    card: CardRecord | None = None

    @property
    def problem(self) -> str:
        if self.card is not None:
            return self.card.card.problem
        return (self.record.titles or self.record.prompts or [""])[0][:200]

    @property
    def outcome(self) -> str:
        return self.card.card.outcome.value if self.card is not None else "no card"

    @property
    def date(self) -> str:
        started = self.record.started_at
        return started.date().isoformat() if started else "undated"

    def resume(self) -> str:
        return resume_command(self.record)

    def as_json(self) -> dict[str, object]:
        r = self.record
        return {
            "session_id": r.session_id,
            "project": r.project,
            "cwd": r.cwd,
            "git_branch": r.git_branch,
            "agent": r.agent,
            "started_at": r.started_at.isoformat() if r.started_at else None,
            "ended_at": r.ended_at.isoformat() if r.ended_at else None,
            "problem": self.problem,
            "outcome": self.outcome,
            "prompts": len(r.turns),
            "resume": self.resume(),
        }


@dataclass
class HistoryHit:
    summary: SessionSummary
    match: SessionMatch

    def as_json(self) -> dict[str, object]:
        m = self.match
        return {
            **self.summary.as_json(),
            "score": m.score,
            "count": m.count,
            "turns": m.turns,
            "in_summary": m.in_summary,
            "snippet": m.snippet,
            "missing": m.missing,
        }


def visible_card(card: CardRecord | None) -> CardRecord | None:
    """The card an agent may read: a vetoed card's problem and decisions leave every history answer."""
    if card is None or card.review_state is ReviewState.VETOED:
        return None
    return card


def summarise(memory: Memory, record: HistoryRecord) -> SessionSummary:
    return SessionSummary(record, visible_card(memory.store.get(record.tenant_id, record.session_id)))


def _clean_query(memory: Memory, query: str) -> str:
    query = (query or "").strip()
    if not query:
        raise InvalidArgumentError("the topic must be a non-empty word or phrase")
    return Scrubber.from_settings(memory.settings).scrub(query[:MAX_QUERY_CHARS])


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgumentError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    return limit


def search_history(
    memory: Memory,
    tenant_id: str,
    query: str,
    filters: HistoryFilters | None = None,
    limit: int = DEFAULT_LIMIT,
    some_words: bool = False,
) -> list[HistoryHit]:
    """Which sessions mentioned a topic, best first: count of mentions, matching turns, a snippet
    (`some_words`: also those naming only some of its words, after the ones naming all)."""
    return counted_search(memory, tenant_id, query, filters, limit, pool=limit, some_words=some_words)[0]


def counted_search(
    memory: Memory,
    tenant_id: str,
    query: str,
    filters: HistoryFilters | None = None,
    limit: int = DEFAULT_LIMIT,
    pool: int = MAX_LIMIT,
    some_words: bool = False,
) -> tuple[list[HistoryHit], int]:
    """The best `limit` sessions mentioning a topic, and how many of the best `pool` matched (so a cut
    result can say how many it left out)."""
    check_tenant(tenant_id)
    store = history_of(memory)
    if filters is not None and filters.session_id:  # `--session` takes a unique prefix too
        resolved = session_id_in(store, tenant_id, filters.session_id)
        filters = filters.model_copy(update={"session_id": resolved})
    check_limit(limit)
    matches = store.match(
        tenant_id, _clean_query(memory, query), filters or HistoryFilters(), pool, some_words=some_words
    )
    hits = []
    for match in matches[:limit]:
        record = store.get(tenant_id, match.session_id)
        if record is not None:
            hits.append(HistoryHit(summarise(memory, record), match))
    return hits, len(matches)


def get_history(memory: Memory, tenant_id: str, typed: str) -> HistoryRecord:
    """The session `typed` names: its id, a unique prefix of the id, or its name (a session title, exactly
    or a unique prefix, case-insensitive). Several matches raise AmbiguousSessionError listing them."""
    check_tenant(tenant_id)
    store = history_of(memory)
    record = store.get(tenant_id, session_id_in(store, tenant_id, typed))
    if record is not None:
        return record
    named = sessions_named(store, tenant_id, typed)
    if len(named) > 1:
        labels = {
            r.session_id: f"{r.started_at.date() if r.started_at else ''} {session_label(r)}" for r in named
        }
        raise AmbiguousSessionError(typed.strip(), [r.session_id for r in named], labels)
    if not named:
        raise NotFoundError(not_found("session with id or name", typed) + " (run `episodic index`)")
    return named[0]


def session_name(record: HistoryRecord) -> str:
    """The session's name: its latest title (Claude Code's custom, AI or summary title), else ''."""
    return record.titles[-1] if record.titles else ""


def session_label(record: HistoryRecord) -> str:
    """How a session is listed: its name, else the start of its first prompt."""
    return session_name(record) or " ".join((record.prompts[:1] or [""])[0].split())[:80]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def sessions_named(store: HistoryStore, tenant_id: str, typed: str) -> list[HistoryRecord]:
    """Sessions with a name equal to `typed` (case and spacing aside); else those with one starting so. A
    session's names are its titles; an untitled one is named by its first prompt (as the agent lists it)."""
    wanted = _folded(typed)
    if not wanted:
        return []
    records = store.sessions(tenant_id, HistoryFilters())
    names = {r.session_id: [_folded(t) for t in (r.titles or r.prompts[:1])] for r in records}
    exact = [r for r in records if wanted in names[r.session_id]]
    return exact or [r for r in records if any(n.startswith(wanted) for n in names[r.session_id])]


def sessions_in_range(
    memory: Memory,
    tenant_id: str,
    since: datetime | None,
    until: datetime | None,
    project: str | None = None,
) -> list[SessionHistory]:
    """Every session started in [since, until), oldest first, with its history record (prompts in full,
    files touched, subagents, closing summary), its card when it has one, and its work-item links."""
    check_tenant(tenant_id)
    store = history_of(memory)
    records = store.sessions(tenant_id, HistoryFilters(since=since, until=until, project=project))
    return [
        SessionHistory(
            record=r,
            card=visible_card(memory.store.get(tenant_id, r.session_id)),
            links=store.links(tenant_id, session_id=r.session_id),
        )
        for r in records
    ]


@dataclass
class SessionHistory:
    record: HistoryRecord
    card: CardRecord | None = None
    links: list[WorkLink] = field(default_factory=list)


# ---------------------------------------------------------------- resume


RESUME_COMMANDS = {"claude-code": ("claude", "--resume"), "codex": ("codex", "resume")}


def resume_argv(record: HistoryRecord) -> list[str]:
    """The command that reopens this exact conversation in its agent."""
    parts = RESUME_COMMANDS.get(record.agent)
    if parts is None:
        raise InvalidArgumentError(f"sessions of {record.agent} cannot be resumed by id")
    return [*parts, record.session_id]


def resume_command(record: HistoryRecord) -> str:
    try:
        argv = shlex.join(resume_argv(record))
    except InvalidArgumentError:
        return ""
    return f"cd {shlex.quote(record.cwd)} && {argv}" if record.cwd else argv


# ---------------------------------------------------------------- links


def check_session_id(session_id: str) -> str:
    session_id = (session_id or "").strip()
    if not _SESSION_ID.match(session_id):
        raise InvalidArgumentError(f"{session_id!r} is not a session id")
    return session_id


def link_session(
    memory: Memory,
    tenant_id: str,
    session_id: str,
    item: str,
    *,
    cwd: str = "",
    terminal: str = "",
    tracker: Tracker | None = None,
    ask_tracker_in_cwd: bool = False,
    now: datetime | None = None,
) -> WorkLink:
    """Record a confirmed link (appended: earlier links stay); a container item (a Beads epic) is refused.
    Only a session the tenant owns: one in its history or cards, or — for the server's own tenant, whose
    transcripts are on this machine — one not indexed yet (the current one usually is not). Another
    tenant's session gets the same error as an unknown id, so the answer reveals nothing about it.

    The tracker runs in the session's recorded folder only (its history record's cwd): a folder the caller
    names is stored as its note, never run in, unless `ask_tracker_in_cwd` (the CLI: the user's own shell
    folder). Without a recorded folder the tracker is not asked, so no folder changes the answer."""
    check_tenant(tenant_id)
    parsed = parse_item(item)
    store = history_of(memory)
    # the current session is usually not indexed yet: an unknown id is linked as typed
    session_id = check_session_id(session_id_in(store, tenant_id, session_id))
    record = store.get(tenant_id, session_id)
    if (
        record is None
        and tenant_id != memory.settings.tenant  # the server's own tenant (record.is_server_tenant)
        and memory.store.get(tenant_id, session_id) is None
    ):
        raise NotFoundError(
            f"no session {session_id!r} in this tenant's history or cards: index or harvest it, then link it"
        )
    scrubber = Scrubber.from_settings(memory.settings)  # the caller's free text is stored and shown
    where = scrubber.scrub_field(cwd, MAX_LINK_FIELD_CHARS) or (record.cwd if record else "")
    terminal = scrubber.scrub_field(terminal, MAX_LINK_FIELD_CHARS)
    ask_in = where if ask_tracker_in_cwd else (record.cwd if record else "")
    if parsed.kind == "beads" and ask_in and (tracker or NoTracker()).is_container(parsed.key, ask_in):
        raise InvalidArgumentError(
            f"{parsed.key} is an epic (a container of other items): link the session to one of its tasks"
        )
    link = WorkLink(
        tenant_id=tenant_id,
        session_id=session_id,
        item=parsed.key,
        kind=parsed.kind,
        origin="confirmed",
        linked_at=now or datetime.now(UTC),
        cwd=where,
        terminal=terminal,
        url=parsed.url,
        session_name=session_name(record) if record else "",
    )
    store.add_links([link])
    return link


@dataclass
class LinkedSession:
    link: WorkLink
    summary: SessionSummary | None  # None: the session is not indexed yet


def show_links(memory: Memory, tenant_id: str, target: str) -> tuple[str, list[LinkedSession]]:
    """('session', its items) when `target` is a known session, else ('item', its sessions); newest first."""
    check_tenant(tenant_id)
    store = history_of(memory)
    target = (target or "").strip()
    target = session_id_in(store, tenant_id, target)  # a session's unique prefix, or unchanged
    by_session = store.links(tenant_id, session_id=target)
    if by_session or store.get(tenant_id, target) is not None:
        record = store.get(tenant_id, target)
        summary = summarise(memory, record) if record else None
        return "session", [LinkedSession(link, summary) for link in by_session]
    key = parse_item(target).key
    found = []
    for link in store.links(tenant_id, item=key):
        record = store.get(tenant_id, link.session_id)
        found.append(LinkedSession(link, summarise(memory, record) if record else None))
    return "item", found
