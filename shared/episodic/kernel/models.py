"""The data that crosses boundaries: trajectories, cards, records, search hits.

The `Card` model is the single source of truth for the card's JSON schema (sent to LLM
distillers, used as the MCP output schema and for validation).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from episodic.kernel.errors import InvalidArgumentError, TenantError

CARD_SCHEMA_VERSION = 1
CARD_RENDERINGS: tuple[str, ...] = ("struct", "semantic", "reflect")
# the session's first exchange, embedded beside an offline card only (episodic.cards.opening): an extractive card
# misses the words a user searches with; never shown, never the hit's best rendering or its similarity
OPENING = "opening"
RENDERINGS: tuple[str, ...] = (*CARD_RENDERINGS, OPENING)
# renderings a session may lack: an index with or without them is the same index (store.parity), so one
# built before `opening` existed is extended in place, not refused
OPTIONAL_RENDERINGS = frozenset({OPENING})
# renderings an index may have or lack and stay the same index (store.parity): the optional ones, and
# `reflect`, embedded only where it votes or is queried (settings): an index built with it keeps its vectors
UNEMBEDDED_WHEN_UNUSED = frozenset({*OPTIONAL_RENDERINGS, "reflect"})
Rendering = Literal["struct", "semantic", "reflect", "opening"]
LOCAL_TENANT = "local"
# the coding agents whose sessions are read; records written before others were read are Claude Code
AgentName = Literal["claude-code", "codex", "gemini"]
AGENTS: tuple[str, ...] = get_args(AgentName)
DEFAULT_AGENT = "claude-code"
# retrieval defaults (why: episodic.store.hybrid); here so that settings need not import numpy
# `reflect` ranked worst alone on both card sets and lowered the blend on both folds of the dev set: it is
# indexed (and reported as a hit's best rendering) but does not vote by default
# `opening` votes as an equal third where a card has it (measured in docs/evaluation.md)
DEFAULT_RENDERING_WEIGHTS: dict[str, float] = {"struct": 1.0, "semantic": 1.0, "reflect": 0.0, "opening": 1.0}
DEFAULT_KEYWORD_WEIGHT = 1.25  # flat between 1.0 and 1.5 on both card sets and both folds
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_tenant(tenant_id: str | None) -> str:
    """The one tenant rule (stores, search, tokens, the authorizer's context): none given is a TenantError,
    a malformed one an InvalidArgumentError; 1-64 letters, digits, '.', '_' or '-', from a letter or digit."""
    if tenant_id is None or not str(tenant_id).strip():
        raise TenantError("every store call needs a tenant id (none was given)")
    if not _TENANT_RE.match(tenant_id):
        raise InvalidArgumentError(
            f"invalid tenant name {tenant_id!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return tenant_id


class Outcome(StrEnum):
    """How a session ended, judged on evidence in the trace (never on the assistant's claim)."""

    VERIFIED = "verified"  # a passing check after the last edit, or the user confirmed it works
    UNVERIFIED = "unverified"  # changes were made, but nothing after the last edit shows they work
    FAILED = "failed"  # the last check after the last edit failed, or the user said it is still broken
    INFORMATIONAL = "informational"  # no change was attempted: a question, a review, research, a plan


class Card(BaseModel):
    """One session distilled: the method, not the incidentals (no code, paths or stack traces)."""

    model_config = ConfigDict(extra="forbid", title="EpisodeCard")

    problem: str = Field(
        min_length=1,
        max_length=600,
        description="The symptom or goal as the user met it, in plain words (what a future search would ask).",
    )
    steps: list[str] = Field(
        default_factory=list, max_length=12, description="What was done, in order, one short line each."
    )
    key_decisions: list[str] = Field(
        default_factory=list, max_length=8, description="Choices that shaped the work, with the reason."
    )
    insight: str = Field(
        default="",
        max_length=600,
        description="The one thing worth knowing next time (the root cause or lesson).",
    )
    dead_ends: list[str] = Field(
        default_factory=list, max_length=8, description="Attempts that failed and were abandoned, and why."
    )
    misleading_intuitions: list[str] = Field(
        default_factory=list, max_length=6, description="What looked guilty but was not."
    )
    critical_checks: list[str] = Field(
        default_factory=list, max_length=6, description="Checks whose result changed the course of the work."
    )
    outcome: Outcome = Field(
        description="verified | unverified | failed | informational, judged on evidence."
    )
    tags: list[str] = Field(
        default_factory=list, max_length=12, description="Languages, frameworks, tools, problem kinds."
    )

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The schema LLM distillers must satisfy (strict: every property required, no extras)."""
        schema = cls.model_json_schema()
        defs = schema.pop("$defs", {})
        for name, prop in schema["properties"].items():
            ref = prop.pop("$ref", None)
            if ref:  # inline enums: structured-output APIs reject $ref
                target = defs[ref.rsplit("/", 1)[-1]]
                schema["properties"][name] = {**target, **prop}
        schema["required"] = list(schema["properties"].keys())
        schema["additionalProperties"] = False
        return schema


class DistillerInfo(BaseModel):
    kind: str  # heuristic | bedrock | claude-code | self
    model: str | None = None

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.model}" if self.model else self.kind


class DistillUsage(BaseModel):
    duration_ms: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class ReviewState(StrEnum):
    """What a person decided about a card (episodic.cards.review): only `vetoed` hides it."""

    UNREVIEWED = "unreviewed"
    APPROVED = "approved"
    VETOED = "vetoed"


class ReviewEvent(BaseModel):
    """One review act, kept in order (approve, edit, veto, restore, or the session growing under it)."""

    action: str
    at: datetime
    reviewer: str = ""
    reason: str = ""


class Review(BaseModel):
    """A person's review of one session's card, stored with the record (both stores, export/import)."""

    state: ReviewState = ReviewState.UNREVIEWED
    reason: str = ""  # why it was vetoed (required for a veto)
    reviewer: str = ""
    reviewed_at: datetime | None = None
    reviewed_sha256: str = ""  # the transcript hash the review was made on
    original: Card | None = None  # the distilled card, kept beside a human-edited one
    superseded: Card | None = None  # a human-edited card replaced when its session grew
    session_grew: bool = False  # the session grew since this review: the card is new
    history: list[ReviewEvent] = Field(default_factory=list)

    @property
    def edited(self) -> bool:
        return self.original is not None


class CardOrigin(BaseModel):
    """Where a card's session came from: what `cards export` writes beside a card so an import without
    the transcript keeps the card's project, dates and source (episodic.cards.files)."""

    project: str = ""
    agent: str = DEFAULT_AGENT
    cwd: str = ""
    git_branch: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    source_path: str = ""
    source_bytes: int = 0

    @classmethod
    def of(cls, trajectory: Trajectory) -> CardOrigin:
        return cls(
            project=trajectory.project,
            agent=trajectory.agent,
            cwd=trajectory.cwd,
            git_branch=trajectory.git_branch,
            started_at=trajectory.started_at,
            ended_at=trajectory.ended_at,
            source_path=trajectory.source.main_path,
            source_bytes=trajectory.source.total_bytes,
        )


class CardRecord(BaseModel):
    """A card with the metadata kept beside it (not embedded)."""

    card: Card
    session_id: str
    tenant_id: str = LOCAL_TENANT
    project: str = ""
    agent: str = DEFAULT_AGENT  # the coding agent whose session this card distils
    cwd: str = ""
    git_branch: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    source_sha256: str
    source_bytes: int = 0
    distiller: DistillerInfo
    usage: DistillUsage = Field(default_factory=DistillUsage)
    card_schema_version: int = CARD_SCHEMA_VERSION
    indexed_at: datetime | None = None
    review: Review | None = None  # None: nobody has looked at it (episodic.cards.review)
    # the scrubbed first exchange an offline card is also embedded by (episodic.cards.opening); None: not taken
    # (an LLM-written card, or a record older than the `opening` rendering). Kept so an edit can re-embed.
    opening: str | None = None
    source_path: str = ""  # the session's main transcript file when indexed ("" in older records)

    @property
    def origin(self) -> CardOrigin:
        return CardOrigin.model_validate(self.model_dump(include=set(CardOrigin.model_fields)))

    @property
    def review_state(self) -> ReviewState:
        return self.review.state if self.review else ReviewState.UNREVIEWED


# ---------------------------------------------------------------- trajectories


class ToolCall(BaseModel):
    """One tool use and its result, scrubbed, outputs cut head+tail by the parser."""

    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)  # scrubbed, long values cut
    command: str | None = None  # Bash command, when the tool is a shell
    file_path: str | None = None  # Read/Edit/Write target
    output: str = ""  # scrubbed, cut head+tail
    is_error: bool = False
    exit_code: int | None = None
    interrupted: bool = False
    rejected: bool = False  # the user declined the tool use
    timestamp: datetime | None = None
    agent_id: str | None = None  # set when the call came from a folded subagent


class Event(BaseModel):
    """One step of the trajectory in order: a prompt, assistant text, thinking, or a tool call."""

    kind: Literal["prompt", "assistant", "thinking", "tool", "compact_summary", "interrupt"]
    text: str = ""
    tool: ToolCall | None = None
    timestamp: datetime | None = None
    agent_id: str | None = None


class ParseStats(BaseModel):
    lines: int = 0
    malformed_lines: int = 0
    truncated_last_line: bool = False
    truncated_files: int = 0  # files whose last line was cut, summed when stats are merged (an index run's)
    skipped_entry_types: dict[str, int] = Field(default_factory=dict)
    skipped_block_types: dict[str, int] = Field(default_factory=dict)
    duplicate_uuids: int = 0
    injected_context_stripped: int = 0
    thinking_with_text: int = 0
    thinking_stripped: int = 0  # thinking blocks stored without text (signature only / redacted)
    secrets_redacted: dict[str, int] = Field(default_factory=dict)

    def merge(self, other: ParseStats) -> None:
        self.lines += other.lines
        self.malformed_lines += other.malformed_lines
        self.truncated_last_line = self.truncated_last_line or other.truncated_last_line
        self.truncated_files += max(other.truncated_files, int(other.truncated_last_line))
        self.duplicate_uuids += other.duplicate_uuids
        self.injected_context_stripped += other.injected_context_stripped
        self.thinking_with_text += other.thinking_with_text
        self.thinking_stripped += other.thinking_stripped
        for mine, theirs in (
            (self.skipped_entry_types, other.skipped_entry_types),
            (self.skipped_block_types, other.skipped_block_types),
            (self.secrets_redacted, other.secrets_redacted),
        ):
            for key, value in theirs.items():
                mine[key] = mine.get(key, 0) + value


class SessionSource(BaseModel):
    """Where one session's lines live on disk: its main file plus folded subagent files."""

    session_key: str  # sessionId when known from the file name, else the main file's stem
    main_path: str
    subagent_paths: list[str] = Field(default_factory=list)
    skipped_agent_paths: list[str] = Field(default_factory=list)  # internal agents (compaction, suggestions)
    total_bytes: int = 0
    mtime: float = 0.0
    agent: str = DEFAULT_AGENT  # which agent's format the files are in (chooses the parser)

    @property
    def paths(self) -> list[str]:
        return [self.main_path, *self.subagent_paths]


class Trajectory(BaseModel):
    """A session made readable: everything a distiller needs, already scrubbed."""

    session_id: str
    source: SessionSource
    source_sha256: str  # hash of the raw bytes of all paths (the idempotency key)
    cwd: str = ""
    project: str = ""  # derived from cwd (last path components), never from the folder name
    git_branch: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    titles: list[str] = Field(default_factory=list)  # summary / custom-title / ai-title entries
    request: str = ""  # the first real user prompt
    prompts: list[str] = Field(default_factory=list)  # every real user prompt, in order (incl. the first)
    events: list[Event] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    files_read: list[str] = Field(default_factory=list)
    files_edited: list[str] = Field(default_factory=list)
    thinking: list[str] = Field(default_factory=list)
    compact_summaries: list[str] = Field(default_factory=list)
    closing_summary: str = ""  # the last assistant text of the main thread
    subagents: list[str] = Field(default_factory=list)  # agent ids folded into this session
    models: list[str] = Field(default_factory=list)
    entrypoint: str = ""
    agent: str = DEFAULT_AGENT  # claude-code | codex | gemini
    agent_version: str = ""  # the CLI version that wrote the session, when the file says
    stats: ParseStats = Field(default_factory=ParseStats)


class NotEpisode(BaseModel):
    """A session file that is not an episode to index, with the reason (reported, never silent)."""

    source: SessionSource
    session_id: str | None = None
    # empty | snapshot-only | memory-summariser | internal-agent | distiller-run | unreadable
    # | not-claude-code | malformed (lines, none readable) | no-model-turn (no model ever answered)
    reason: str
    stats: ParseStats = Field(default_factory=ParseStats)


# ---------------------------------------------------------------- search


class SearchFilters(BaseModel):
    include_unverified: bool = False
    project: str | None = None
    agent: str | None = None  # only episodes of this coding agent (claude-code | codex | gemini)
    tags: list[str] = Field(default_factory=list)
    since: datetime | None = None
    renderings: list[str] = Field(default_factory=list)  # compare the query with these only (empty: all)
    approved_only: bool = False  # only cards a person approved (the hook under `review_required`)
    # sessions left out of the candidate pool before ranking (the evaluation's leave-one-out view: the pool,
    # its z-scores, the judge and the tiers are those a prompt would meet if these sessions were never stored)
    exclude_sessions: list[str] = Field(default_factory=list)


class Confidence(StrEnum):
    """How sure the read path is that a hit is the same problem (episodic.core.confidence decides)."""

    STRONG = "strong"  # a full card may be shown, phrased as a close match
    WEAK = "weak"  # a one-line pointer at most, marked as weak (the hook gives it unasked)
    FAINT = "faint"  # a compact entry for an agent that asks, marked as faint (never injected unasked)


class SearchHit(BaseModel):
    record: CardRecord
    score: float  # fused score used for ranking
    similarity: float  # best cosine similarity over the renderings (the threshold applies to it)
    rendering: str | None = None  # which rendering matched best
    keyword_rank: int | None = None
    # the keyword half's raw relevance: query terms the card shares, weighted by how rare they are among the
    # tenant's own cards (a card of generic words shares only common, near-zero-weight terms); 0: no match;
    # None: the store ran no keyword search
    keyword_score: float | None = None
    pool_size: int = 0  # sessions the vector half was standardised over (0: unknown)
    confidence: Confidence | None = None  # set by `search_traces` (episodic.core.confidence)
    judge: float | None = None  # the local judge's calibrated probability (episodic.judge); None: not judged


class IndexManifest(BaseModel):
    """Embedding parity: an index is written and queried with one embedder, dimension and renderings."""

    embedder_id: str
    dimension: int
    renderings: list[str]
    card_schema_version: int = CARD_SCHEMA_VERSION
