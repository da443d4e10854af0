"""ISO weeks (Monday to Sunday, UTC) and the range a dream covers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from episodic.kernel.errors import InvalidArgumentError

_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")


@dataclass(frozen=True, order=True)
class IsoWeek:
    year: int
    week: int

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        match = _WEEK_RE.match(text.strip())
        if not match:
            raise InvalidArgumentError(f"week {text!r} is not an ISO week like 2026-W30")
        year, week = int(match[1]), int(match[2])
        try:
            date.fromisocalendar(year, week, 1)
        except ValueError as exc:
            raise InvalidArgumentError(f"week {text!r} does not exist ({exc})") from exc
        return cls(year, week)

    @classmethod
    def of(cls, day: date) -> IsoWeek:
        year, week, _ = day.isocalendar()
        return cls(year, week)

    @property
    def monday(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    @property
    def sunday(self) -> date:
        return self.monday + timedelta(days=6)

    @property
    def since(self) -> datetime:
        return datetime.combine(self.monday, time(), tzinfo=UTC)

    @property
    def until(self) -> datetime:
        """Exclusive: the next Monday, 00:00 UTC."""
        return self.since + timedelta(days=7)

    def next(self) -> IsoWeek:
        return IsoWeek.of(self.monday + timedelta(days=7))

    @property
    def period(self) -> str:
        return f"{self.monday.isoformat()} to {self.sunday.isoformat()}"

    def __str__(self) -> str:
        return f"{self.year}-W{self.week:02d}"


def last_complete_week(now: datetime) -> IsoWeek:
    return IsoWeek.of((now.astimezone(UTC) - timedelta(days=7)).date())


def weeks_between(first: IsoWeek, last: IsoWeek) -> list[IsoWeek]:
    out: list[IsoWeek] = []
    week = first
    while week <= last:
        out.append(week)
        week = week.next()
    return out


def parse_day(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"date {text!r} is not YYYY-MM-DD") from exc


def resolve_weeks(
    *,
    week: str | None,
    since: str | None,
    until: str | None,
    recorded: list[IsoWeek],
    first_session: datetime | None,
    now: datetime,
) -> list[IsoWeek]:
    """The weeks to dream: one given week; the weeks touching [since, until]; or by default the weeks after
    the last record (from the first session's week when none exists) up to the last complete week."""
    if week and (since or until):
        raise InvalidArgumentError("give --week or --since/--until, not both")
    if week:
        return [IsoWeek.parse(week)]
    if since or until:
        if not (since and until):
            raise InvalidArgumentError("--since and --until go together")
        start, end = parse_day(since), parse_day(until)
        if end < start:
            raise InvalidArgumentError(f"--until {until} is before --since {since}")
        return weeks_between(IsoWeek.of(start), IsoWeek.of(end))
    last = last_complete_week(now)
    if recorded:
        first = max(recorded).next()
    elif first_session is not None:
        first = IsoWeek.of(first_session.astimezone(UTC).date())
    else:
        return []
    return weeks_between(first, last)
