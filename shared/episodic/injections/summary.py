"""What the injection records say, for a person: injections per session, the share used (by each rule), the
cards given most with their use rates, and the characters (≈ tokens) of injected text per day. One summary
for `episodic stats`, `episodic doctor`, `episodic injections` and the viewer page."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from episodic.kernel.injection_port import USES, InjectionRecord, InjectionStore

CHARS_PER_TOKEN = 4  # the usual rough rate for English text and code
DEFAULT_DAYS = 30
RULES = ("opened", "cited", "acted")


class CardRow(BaseModel):
    card_id: str
    given: int
    read: int  # records whose session has been read
    used: int
    use_rate: float | None  # used / read


class InjectionSummary(BaseModel):
    """The summary of one tenant's records over a period (JSON for `--json` and the viewer)."""

    days: int
    records: int
    sessions: int
    per_session_median: float
    per_session_p95: float
    by_tier: dict[str, int]
    by_source: dict[str, int]
    read: int  # records whose receiving session has been read
    used: int
    share_used: float | None
    by_use: dict[str, int]
    share_by_rule: dict[str, float | None]  # records each rule matched, over those read
    top_cards: list[CardRow]
    chars_per_day: dict[str, int]

    @property
    def line(self) -> str:
        """One line for `stats` and `doctor`."""
        if not self.records:
            return f"none in the last {self.days} days"
        used = (
            "none read yet" if self.share_used is None else f"{self.share_used:.0%} of {self.read} read used"
        )
        chars = sum(self.chars_per_day.values()) / max(len(self.chars_per_day), 1)
        return (
            f"{self.records} in {self.sessions} sessions over {self.days} days (median "
            f"{self.per_session_median:g} a session, p95 {self.per_session_p95:g}); {used}; "
            f"{chars:,.0f} chars (≈ {chars / CHARS_PER_TOKEN:,.0f} tokens) a day given"
        )


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (0 for nothing)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return float(ordered[int(rank) - 1])


def summarise(
    records: Sequence[InjectionRecord], days: int = DEFAULT_DAYS, top: int = 10
) -> InjectionSummary:
    per_session = Counter(r.session_id for r in records)
    counts = sorted(per_session.values())
    read = [r for r in records if r.use is not None]
    used = [r for r in read if r.use != "ignored"]
    by_card: dict[str, list[InjectionRecord]] = defaultdict(list)
    for r in records:
        by_card[r.card_id].append(r)
    rows = []
    for card_id, given in sorted(by_card.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]:
        card_read = [r for r in given if r.use is not None]
        card_used = sum(1 for r in card_read if r.use != "ignored")
        rate = round(card_used / len(card_read), 3) if card_read else None
        rows.append(
            CardRow(card_id=card_id, given=len(given), read=len(card_read), used=card_used, use_rate=rate)
        )
    per_day: Counter[str] = Counter()
    for r in records:
        per_day[r.at.astimezone(UTC).date().isoformat()] += r.chars
    matched = {rule: sum(1 for r in read if f"{rule}:" in r.use_detail) for rule in RULES}
    return InjectionSummary(
        days=days,
        records=len(records),
        sessions=len(per_session),
        per_session_median=percentile(counts, 0.5),
        per_session_p95=percentile(counts, 0.95),
        by_tier=dict(Counter(r.tier for r in records)),
        by_source=dict(Counter(r.source for r in records)),
        read=len(read),
        used=len(used),
        share_used=round(len(used) / len(read), 3) if read else None,
        by_use={use: sum(1 for r in read if r.use == use) for use in USES},
        share_by_rule={k: (round(v / len(read), 3) if read else None) for k, v in matched.items()},
        top_cards=rows,
        chars_per_day=dict(sorted(per_day.items())),
    )


def tenant_summary(
    store: InjectionStore, tenant_id: str, days: int = DEFAULT_DAYS, now: datetime | None = None
) -> InjectionSummary:
    since = (now or datetime.now(UTC)) - timedelta(days=days)
    return summarise(store.since(tenant_id, since), days)


def as_json(summary: InjectionSummary) -> dict[str, Any]:
    return summary.model_dump(mode="json")
