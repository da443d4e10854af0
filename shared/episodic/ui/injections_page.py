"""The viewer's injections page: what memory gave this tenant's sessions lately and what they did with it
(injections per session, the share used by each rule, the cards given most with their use rates, and the
characters, ≈ tokens, of injected text per day)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from episodic.core.injected import injection_store
from episodic.injections.summary import CHARS_PER_TOKEN, DEFAULT_DAYS, summarise
from episodic.kernel.errors import InvalidArgumentError

MAX_DAYS = 365
LISTED_SESSIONS = 20


def injections_context(source: object, tenant_id: str, query: dict[str, str]) -> dict[str, Any]:
    """What the page shows for the tenant (`summary` None: no records here, e.g. a deployed endpoint's)."""
    from datetime import UTC, datetime, timedelta

    try:
        days = min(max(int(query.get("days") or DEFAULT_DAYS), 1), MAX_DAYS)
    except ValueError as exc:
        raise InvalidArgumentError("days must be a whole number") from exc
    memory = getattr(source, "memory", None)  # a deployed endpoint's records are not served over MCP
    store = injection_store(memory) if memory is not None else None
    if store is None:
        return {"summary": None, "days": days, "sessions": [], "bars": []}
    records = store.since(tenant_id, datetime.now(UTC) - timedelta(days=days))
    summary = summarise(records, days)
    per_session = Counter(r.session_id for r in records)
    used = Counter(r.session_id for r in records if r.use not in (None, "ignored"))
    sessions = [(sid, n, used[sid]) for sid, n in per_session.most_common(LISTED_SESSIONS)]
    return {"summary": summary, "days": days, "sessions": sessions, "bars": day_bars(summary.chars_per_day)}


def day_bars(chars_per_day: dict[str, int]) -> list[dict[str, Any]]:
    """One row a day: its characters, ≈ tokens, and a bar's width in percent of the busiest day."""
    top = max(chars_per_day.values(), default=0) or 1
    return [
        {"day": day, "chars": chars, "tokens": chars // CHARS_PER_TOKEN, "width": round(100 * chars / top)}
        for day, chars in chars_per_day.items()
    ]
