"""Arguments every face shares: dates and filters parsed one way (CLI options and MCP arguments)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from pydantic import Field

from episodic.history.models import HistoryFilters
from episodic.kernel.errors import InvalidArgumentError
from episodic.mcp.schema import ToolArguments


def parse_when(raw: str, name: str, *, end: bool = False) -> datetime:
    """An ISO date or datetime (UTC when naive). A bare date as an `until` bound includes that day."""
    text = raw.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        day = None
    if day is not None:
        start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
        return start + timedelta(days=1) if end else start
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidArgumentError(f"{name} must be an ISO date like 2026-01-31, got {raw!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def filters_from(
    since: str | None = None,
    until: str | None = None,
    project: str | None = None,
    session_id: str | None = None,
    week: str | None = None,
) -> HistoryFilters:
    start = parse_when(since, "since") if since else None
    stop = parse_when(until, "until", end=True) if until else None
    if week:
        from episodic.history.views import week_range

        if start or stop:
            raise InvalidArgumentError("give either a week or since/until, not both")
        start, stop = week_range(week)
    if start and stop and start >= stop:
        raise InvalidArgumentError("since must be before until")
    return HistoryFilters(since=start, until=stop, project=project or None, session_id=session_id or None)


class RangeArguments(ToolArguments):
    """The date range and project every history tool takes (MCP arguments; the CLI has options)."""

    since: str | None = Field(None, description="Sessions started on or after this ISO date (YYYY-MM-DD).")
    until: str | None = Field(None, description="Sessions started on or before this ISO date.")
    project: str | None = Field(None, description="Only sessions of this project.")

    def filters(self, session_id: str | None = None, week: str | None = None) -> HistoryFilters:
        return filters_from(self.since, self.until, self.project, session_id=session_id, week=week)
