"""The viewer's injections page: what memory gave this tenant's sessions lately and what they did with it
(injections per session, the share used by each rule, the cards given most with their use rates, and the
characters, ≈ tokens, of injected text per day)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from episodic.core.injected import injection_store
from episodic.injections.summary import CHARS_PER_TOKEN, DEFAULT_DAYS, summarise

if TYPE_CHECKING:
    from episodic.ui.views import Response, Viewer

MAX_DAYS = 365
LISTED_SESSIONS = 20


def injections_page(viewer: Viewer, query: dict[str, str]) -> Response:
    from datetime import UTC, datetime, timedelta

    try:
        days = min(max(int(query.get("days") or DEFAULT_DAYS), 1), MAX_DAYS)
    except ValueError:
        return viewer.refused(400, "days must be a whole number")
    memory = getattr(viewer.source, "memory", None)  # a deployed endpoint's records are not served over MCP
    store = injection_store(memory) if memory is not None else None
    if store is None:
        return viewer.page("injections.html", summary=None, days=days, sessions=[], bars=[])
    records = store.since(viewer.tenant_id, datetime.now(UTC) - timedelta(days=days))
    summary = summarise(records, days)
    per_session = Counter(r.session_id for r in records)
    used = Counter(r.session_id for r in records if r.use not in (None, "ignored"))
    sessions = [(sid, n, used[sid]) for sid, n in per_session.most_common(LISTED_SESSIONS)]
    return viewer.page(
        "injections.html", summary=summary, days=days, sessions=sessions, bars=day_bars(summary.chars_per_day)
    )


def day_bars(chars_per_day: dict[str, int]) -> list[dict[str, Any]]:
    """One row a day: its characters, ≈ tokens, and a bar's width in percent of the busiest day."""
    top = max(chars_per_day.values(), default=0) or 1
    return [
        {"day": day, "chars": chars, "tokens": chars // CHARS_PER_TOKEN, "width": round(100 * chars / top)}
        for day, chars in chars_per_day.items()
    ]
