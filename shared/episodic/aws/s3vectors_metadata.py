"""How a card is laid out in S3 Vectors: keys, filterable and non-filterable metadata, size limits.

- key: "{tenant}#{session}#{rendering}" (1-1024 characters; '#' is reserved in tenant and session).
- filterable metadata (≤ 2 KB, measured as compact UTF-8 JSON): tenant, session_id, rendering, outcome,
  project (cut to 200 characters), agent, started_at (epoch seconds), tags (cut to fit), source_sha256, distiller.
- non-filterable keys (declared at index creation, see NON_FILTERABLE_KEYS): `record` (the CardRecord JSON)
  on every vector, `text` (keyword text for BM25) on the session's primary rendering only, so full-text
  search ranks each session once. Total metadata ≤ 40 KB.
- the parity manifest is one reserved vector, MANIFEST_KEY, with no `tenant` key: every query is filtered
  by tenant, so it can never appear in a result.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import DEFAULT_AGENT, CardRecord, check_tenant

KEY_SEPARATOR = "#"
MANIFEST_KEY = "__manifest__"
RECORD_KEY = "record"
TEXT_KEY = "text"
MAX_EXCLUDED_IN_FILTER = 50  # excluded session ids sent in the service's filter; the pool drops the rest
NON_FILTERABLE_KEYS: tuple[str, ...] = (RECORD_KEY, TEXT_KEY)  # the index must declare these at creation
MAX_KEY_CHARS = 1024
MAX_FILTERABLE_BYTES = 2048
MAX_TOTAL_METADATA_BYTES = 40 * 1024
MAX_PROJECT_CHARS = 200
MAX_AGENT_CHARS = 40
MAX_TAG_CHARS = 64


def json_size(value: Any) -> int:
    """Bytes of compact UTF-8 JSON: how we (and the fake) measure metadata against the service limits."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _check_part(name: str, value: str) -> str:
    if name == "tenant":
        check_tenant(value)
    if not value:
        raise InvalidArgumentError(f"{name} is required")
    if KEY_SEPARATOR in value:
        raise InvalidArgumentError(f"{name} {value!r} must not contain {KEY_SEPARATOR!r}")
    return value


def vector_key(tenant_id: str, session_id: str, rendering: str) -> str:
    key = KEY_SEPARATOR.join(
        (
            _check_part("tenant", tenant_id),
            _check_part("session id", session_id),
            _check_part("rendering", rendering),
        )
    )
    if len(key) > MAX_KEY_CHARS:
        raise InvalidArgumentError(f"vector key longer than {MAX_KEY_CHARS} characters: {key[:80]}…")
    return key


def epoch_seconds(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(aware.timestamp())


def filterable_metadata(record: CardRecord, rendering: str) -> dict[str, Any]:
    """The keys queries filter on, cut to fit in 2 KB (project and tags first); raises if still over."""
    meta: dict[str, Any] = {
        "tenant": record.tenant_id,
        "session_id": record.session_id,
        "rendering": rendering,
        "outcome": record.card.outcome.value,
        "project": record.project[:MAX_PROJECT_CHARS],
        "agent": record.agent[:MAX_AGENT_CHARS],
        "tags": list(
            dict.fromkeys(t.lower()[:MAX_TAG_CHARS] for t in record.card.tags)
        ),  # matched in any case
        "source_sha256": record.source_sha256,
        "distiller": record.distiller.id[:200],
        "review": record.review_state.value,  # episodic.cards.review: vetoed vectors leave every query
    }
    if record.started_at is not None:
        meta["started_at"] = epoch_seconds(record.started_at)
    while json_size(meta) > MAX_FILTERABLE_BYTES and meta["tags"]:
        meta["tags"] = meta["tags"][:-1]
    if not meta["tags"]:
        del meta["tags"]  # S3 Vectors rejects empty arrays
    if json_size(meta) > MAX_FILTERABLE_BYTES:
        raise InvalidArgumentError(
            f"filterable metadata for session {record.session_id!r} is {json_size(meta)} bytes, "
            f"over the S3 Vectors limit of {MAX_FILTERABLE_BYTES}"
        )
    return meta


def vector_metadata(record: CardRecord, rendering: str, keyword_text: str | None) -> dict[str, Any]:
    """Filterable keys + the record JSON (+ the keyword text on the primary rendering), under 40 KB."""
    meta = filterable_metadata(record, rendering)
    meta[RECORD_KEY] = record.model_dump_json()
    if keyword_text:
        room = MAX_TOTAL_METADATA_BYTES - json_size(meta) - 64
        text = keyword_text
        while text and json_size(text) > room:  # keyword text is a search aid: cut it, never the record
            text = text[: max(0, min(len(text) - 1, int(len(text) * room / json_size(text))))]
        if text:
            meta[TEXT_KEY] = text
    if json_size(meta) > MAX_TOTAL_METADATA_BYTES:
        raise InvalidArgumentError(
            f"card record for session {record.session_id!r} is {json_size(meta)} bytes of metadata, "
            f"over the S3 Vectors limit of {MAX_TOTAL_METADATA_BYTES}"
        )
    return meta


def build_filter(
    tenant_id: str,
    *,
    verified_only: bool,
    project: str | None,
    tags: list[str],
    since: datetime | None,
    renderings: list[str] | None = None,
    agent: str | None = None,
    approved_only: bool = False,
    exclude_sessions: list[str] | None = None,
) -> dict[str, Any]:
    """Every query's filter: the tenant always, then the caller's narrowing."""
    clauses: list[dict[str, Any]] = [{"tenant": {"$eq": tenant_id}}]
    if verified_only:
        clauses.append({"outcome": {"$eq": "verified"}})
    if project:
        clauses.append({"project": {"$eq": project[:MAX_PROJECT_CHARS]}})
    if agent:
        wanted_agent: dict[str, Any] = {"agent": {"$eq": agent[:MAX_AGENT_CHARS]}}
        # vectors written before the agent was recorded are Claude Code's
        clauses.append(
            {"$or": [wanted_agent, {"agent": {"$exists": False}}]} if agent == DEFAULT_AGENT else wanted_agent
        )
    wanted = sorted({t.lower()[:MAX_TAG_CHARS] for t in tags if t.strip()})
    if wanted:  # a card matches when it has ANY of the tags ($in on a list field matches any element)
        clauses.append({"tags": {"$in": wanted}})
    if since is not None:
        clauses.append({"started_at": {"$gte": epoch_seconds(since)}})
    if renderings:
        clauses.append({"rendering": {"$in": sorted(renderings)}})
    # a vetoed card is never returned; vectors written before reviews existed have no `review` key
    clauses.append({"$or": [{"review": {"$exists": False}}, {"review": {"$ne": "vetoed"}}]})
    if approved_only:
        clauses.append({"review": {"$eq": "approved"}})
    excluded = sorted({s for s in exclude_sessions or [] if s})
    if 0 < len(excluded) <= MAX_EXCLUDED_IN_FILTER:  # more: the base store's post-filter alone drops them
        clauses.append({"session_id": {"$nin": excluded}})
    return {"$and": clauses}
