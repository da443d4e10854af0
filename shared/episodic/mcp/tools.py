"""The MCP read tools (search_traces, get_episode) and the default registry (read + record_episode).

Tools call the core (`episodic.core.search`); the registry (`mcp.registry`) turns core errors into tool errors.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from episodic.kernel.auth import Principal
from episodic.kernel.errors import (
    InvalidArgumentError,
)
from episodic.kernel.models import AgentName, Card, CardRecord, SearchFilters, SearchHit
from episodic.mcp.record_tool import record_tool
from episodic.mcp.registry import (  # re-exported: the faces and tests import the registry from here
    READ_ONLY,
    Tool,
    ToolOutput,
    ToolRegistry,
    UnknownToolError,
)
from episodic.mcp.schema import Query, ToolArguments, ToolResult

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

log = logging.getLogger(__name__)

PACKED_CARD_CHARS = 1500
NO_MATCH_TEXT = (
    "No confident match: no past episode in memory is close to this query{scope}. "
    "This is a real answer, not an error: proceed without past-episode guidance, or retry once with "
    "the symptom phrased differently{hint}."
)
ENTRIES_HEADER = (
    "No close match{scope}. Possibly related sessions, best first (weak: maybe related; faint: probably "
    "not); get_episode ID gives a card:"
)
MORE_HEADER = "Also possibly related (weak: maybe related; faint: probably not); get_episode ID gives a card:"
# entries labelled with an outcome other than verified (listed, never given as cards, unless asked)
UNVERIFIED_NOTE = (
    "\n(unverified: the fix was never confirmed; failed: its last check still failed; informational: no fix "
    "was made. Read these as leads.)"
)


# ---------------------------------------------------------------- schemas


CardFields = Annotated[dict[str, Any], WithJsonSchema(Card.json_schema())]  # the card as distillers write it
Distiller = Annotated[
    str,
    Field(
        description="Who wrote the card; heuristic:* is an offline extract of the session's own sentences."
    ),
]
Review = Annotated[str, Field(description="unreviewed | approved (a person's review).")]


class Hit(ToolResult):
    session_id: str
    project: str
    date: str | None = Field(description="When the session started (ISO date).")
    score: float
    similarity: float
    card: CardFields
    distiller: Distiller | None = None
    review: Review | None = None
    confidence: Literal["strong", "weak", "faint"] | None = Field(
        None,
        description=(
            "strong: a close match; weak: maybe related; faint: probably unrelated. Check a weak or "
            "faint one with get_episode before use."
        ),
    )


class SearchArguments(ToolArguments):
    query: Query = Field(
        description=(
            "What you observed, in plain words, as one or two sentences: the symptom or goal, not a guessed "
            "cause (e.g. 'pytest cannot find a fixture after conftest was moved into a subfolder'). Name "
            "the tool and the error text if there is one; leave out file paths and code."
        ),
    )
    # omitted: the server's `default_k` decides (the schema shows the shipped default)
    k: Annotated[int, Field(ge=1, le=5)] | None = Field(
        None, json_schema_extra={"default": 3}, description="How many episodes (1-5)."
    )
    # None (the default): such episodes as labelled entries, never full cards (core.confidence)
    include_unverified: bool | None = Field(
        None,
        description=(
            "Episodes whose fix was never verified (failed, unverified, informational). Omitted: listed as "
            "one-line entries labelled with their outcome, never as full cards; true: as cards too when "
            "close; false: left out."
        ),
    )
    project: str | None = Field(None, description="Only episodes from this project.")
    agent: AgentName | None = Field(None, description="Only episodes of this coding agent's sessions.")
    tags: list[str] | None = Field(
        None, description="Only episodes carrying at least one of these tags (e.g. ['python', 'pytest'])."
    )
    since: str | None = Field(
        None, description="Only episodes started on or after this ISO date (YYYY-MM-DD)."
    )
    approved_only: bool = Field(False, description="Only episodes a person reviewed and approved.")
    include_weak: bool = Field(
        True,
        description=(
            "List weak and faint matches (maybe related), labelled, as one-line entries after the close "
            "ones; false: close matches only."
        ),
    )
    receiving_session: Annotated[str, Field(max_length=200)] | None = Field(
        None,
        description=(
            "Set by the prompt hook: the session the answer is injected into. The answer is then what the "
            "hook injects (a card it was given already is left out) and it is recorded."
        ),
    )
    receiving_agent: Annotated[str, Field(max_length=40)] | None = Field(
        None, description="Set by the prompt hook: the coding agent of the receiving session."
    )


class SearchResult(ToolResult):
    results: list[Hit]
    message: str | None = None


class EpisodeArguments(ToolArguments):
    session_id: str = Field(min_length=1, description="A session_id returned by search_traces.")


class EpisodeResult(ToolResult):
    session_id: str
    project: str
    git_branch: str | None = None
    started_at: str | None
    ended_at: str | None
    distiller: str
    card_schema_version: int | None = None
    card: CardFields
    review: Review | None = None


# ---------------------------------------------------------------- the read tools


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _parse_since(raw: str) -> datetime:
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            value = datetime.combine(date.fromisoformat(raw.strip()), datetime.min.time())
        except ValueError as exc:
            raise InvalidArgumentError(f"since must be an ISO date like 2026-01-31, got {raw!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def hit_json(hit: SearchHit) -> dict[str, Any]:
    record = hit.record
    return {
        "session_id": record.session_id,
        "project": record.project,
        "date": _date(hit),
        "score": round(float(hit.score), 4),
        "similarity": round(float(hit.similarity), 4),
        "card": record.card.model_dump(mode="json"),
        "distiller": record.distiller.id,
        "review": record.review_state.value,
        **({"confidence": hit.confidence.value} if hit.confidence else {}),
    }


def _label(hit: SearchHit) -> str:
    from episodic.cards.present import entry_label

    return entry_label(hit.confidence.value if hit.confidence else "faint", hit.record.card.outcome.value)


def _date(hit: SearchHit) -> str | None:
    return hit.record.started_at.date().isoformat() if hit.record.started_at else None


def episode_json(record: CardRecord) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "project": record.project,
        "git_branch": record.git_branch,
        "started_at": _iso(record.started_at),
        "ended_at": _iso(record.ended_at),
        "distiller": record.distiller.id,
        "card_schema_version": record.card_schema_version,
        "card": record.card.model_dump(mode="json"),
        "review": record.review_state.value,
    }


def read_tools(memory: Memory) -> list[Tool]:
    """search_traces and get_episode over one Memory (built once per server)."""
    from episodic.cards.present import episode_text, pack_card, pointer_line
    from episodic.core.confidence import cards_only_if_verified, shown
    from episodic.core.search import get_episode, search_traces
    from episodic.kernel.models import Confidence

    def search(principal: Principal, args: SearchArguments) -> ToolOutput:
        include_unverified = args.include_unverified is not False
        filters = SearchFilters(
            include_unverified=include_unverified,
            project=args.project or None,
            agent=args.agent or None,
            tags=list(args.tags or []),
            since=_parse_since(args.since) if args.since else None,
            approved_only=args.approved_only,
        )
        found = search_traces(memory, principal.tenant_id, args.query, k=args.k, filters=filters)
        if args.include_unverified is None:
            found = cards_only_if_verified(found)
        hits = shown(found, include_weak=args.include_weak)
        if args.receiving_session:
            from episodic.core.injected import Receiver, give

            receiver = Receiver(
                principal.tenant_id,
                args.receiving_session,
                args.receiving_agent or "",
                "prompt_hook",
                args.query,
            )
            hits = give(memory, receiver, hits)
        strong = [h for h in hits if h.confidence == Confidence.STRONG]
        entries = [h for h in hits if h.confidence != Confidence.STRONG]
        scope = "" if include_unverified else " (verified episodes only)"
        if filters.approved_only:
            scope = " (episodes a person approved only)"
        parts: list[str] = []
        message = None
        if strong:
            parts.append(
                f"{len(strong)} close past episode(s), best first. Read dead ends and misleading intuitions "
                "first; verify before relying on an insight. get_episode gives the full card."
            )
            parts += [
                pack_card(h.record, similarity=h.similarity, max_chars=PACKED_CARD_CHARS) for h in strong
            ]
        elif not entries:
            hint = "" if include_unverified else ", or with include_unverified=true"
            if not args.include_weak and any(h.confidence is not None for h in found):
                hint += "; include_weak=true lists possibly related sessions"
            message = NO_MATCH_TEXT.format(scope=scope, hint=hint)
            parts.append(message)
        if entries:
            header = MORE_HEADER if strong else ENTRIES_HEADER.format(scope=scope)
            message = None if strong else header
            if any(h.record.card.outcome.value != "verified" for h in entries):
                header += UNVERIFIED_NOTE
            lines = [
                pointer_line(h.record.session_id, _date(h), h.record.card.problem, _label(h)) for h in entries
            ]
            parts.append("\n".join([header, *lines]))
        structured: dict[str, Any] = {"results": [hit_json(h) for h in hits]}
        if message:
            structured["message"] = message
        return ToolOutput("\n\n".join(parts), structured)

    def episode(principal: Principal, args: EpisodeArguments) -> ToolOutput:
        record = get_episode(memory, principal.tenant_id, args.session_id.strip())
        return ToolOutput(episode_text(record), episode_json(record))

    return [
        Tool.from_model(
            SearchArguments,
            search,
            name="search_traces",
            title="Search past coding sessions",
            description=(
                "Find past coding-agent sessions that met a similar problem. Call it at the start of a "
                "debugging, build, test or setup task, and again when stuck. Describe what was observed "
                "(the symptom: the behaviour or error message, the tool involved), not what you suspect "
                "the cause is; past episodes are indexed by their symptom, so a query shaped like one "
                "finds them best. No file paths or code. Returns up to k (default 3) "
                "episodes, best first: close matches as cards (the problem, the insight, dead ends, misleading "
                "intuitions, critical checks, outcome, date, session_id), possibly related ones as one-line "
                "entries labelled weak or faint (open one with get_episode). Full cards are verified fixes only: "
                "an episode whose fix was never verified is an entry labelled with its outcome. Says "
                "explicitly when nothing matches."
            ),
            result=SearchResult,
        ),
        Tool.from_model(
            EpisodeArguments,
            episode,
            name="get_episode",
            title="Read one past session's card",
            description=(
                "Return the full card of one past session (all steps, key decisions, dead ends, "
                "misleading intuitions, critical checks, tags) and its metadata (project, dates, "
                "distiller). Call it with a session_id from search_traces when a hit looks relevant."
            ),
            result=EpisodeResult,
        ),
    ]


def read_only_registry(memory: Memory) -> ToolRegistry:
    """The tools that never write (readOnlyHint): what a read-only deployment serves."""
    full = default_registry(memory)
    tools = (full.get(name) for name in full.names())
    return ToolRegistry(t for t in tools if t is not None and t.annotations.get("readOnlyHint") is True)


def default_registry(memory: Memory) -> ToolRegistry:
    """The core's tools, then each registered feature's (episodic.kernel.feature_contract: the registry knows no feature)."""
    from episodic.mcp.review_tool import review_tool

    features = [tool for feature in memory.features for tool in feature.tools(memory)]
    return ToolRegistry([*read_tools(memory), record_tool(memory), review_tool(memory), *features])


__all__ = [
    "READ_ONLY",
    "Tool",
    "ToolOutput",
    "ToolRegistry",
    "UnknownToolError",
    "default_registry",
    "read_only_registry",
    "read_tools",
]
