"""`episodic experiment report`: the two arms side by side and a verdict the intervals support.

Sessions: those in the experiment log (memory would have been injected), each in the arm the hook chose,
joined with their outcome measures. For every measure: count, mean and median per arm, the difference of
means (with - without) and a percentile-bootstrap interval at a Bonferroni-corrected level, so that the
whole family of measures is covered at 95 %. A measure's result is "better" / "worse" only when its
interval excludes 0; "no effect" only when the interval also rules out a meaningful difference (10 points
of verified rate; a quarter of the typical value otherwise); else the sessions are not enough yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from episodic.experiment.holdout import ARMS, Arm
from episodic.experiment.measures import SessionMeasures

Status = Literal["better", "worse", "no-effect", "unclear", "too-few"]
FAMILY_CONFIDENCE = 0.95
BOOTSTRAP_SAMPLES = 4000
MIN_SESSIONS_PER_ARM = 10  # below this in either arm no interval is computed
VERIFIED_MARGIN = 0.10  # a difference in verified rate smaller than 10 points is not meaningful
RELATIVE_MARGIN = 0.25  # elsewhere: a quarter of the pooled mean


@dataclass(frozen=True)
class Measure:
    name: str
    label: str
    higher_is_better: bool
    primary: bool = False


MEASURES: tuple[Measure, ...] = (
    Measure("verified", "ended verified (share)", True, primary=True),
    Measure("failed_checks", "failed checks", False),
    Measure("tool_calls_to_green", "tool calls, first failing check to passing", False),
    Measure("turns_to_green", "user turns, first failing check to passing", False),
    Measure("reverted_edits", "edits reverted", False),
    Measure("total_tokens", "total tokens", False),
    Measure("wall_seconds", "wall time (s)", False),
)


def _value(measures: SessionMeasures, name: str) -> float | None:
    value = getattr(measures, name)
    return None if value is None else float(value)


def _arm_stats(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "mean": None, "median": None}
    return {"n": len(values), "mean": float(np.mean(values)), "median": float(np.median(values))}


def bootstrap_interval(
    with_values: Sequence[float], without_values: Sequence[float], confidence: float, seed: int = 20
) -> tuple[float, float]:
    """Percentile bootstrap of mean(with) - mean(without), each arm resampled on its own."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(with_values, dtype=float), np.asarray(without_values, dtype=float)
    means_a = a[rng.integers(0, a.size, size=(BOOTSTRAP_SAMPLES, a.size))].mean(axis=1)
    means_b = b[rng.integers(0, b.size, size=(BOOTSTRAP_SAMPLES, b.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means_a - means_b, [tail, 100 - tail])
    return float(low), float(high)


def _status(measure: Measure, low: float, high: float, margin: float) -> Status:
    if low > 0 or high < 0:
        helped = (low > 0) == measure.higher_is_better
        return "better" if helped else "worse"
    if -margin < low and high < margin:
        return "no-effect"
    return "unclear"


def compare(measure: Measure, arms: Mapping[Arm, Sequence[float]], confidence: float) -> dict[str, Any]:
    with_values, without_values = arms["with"], arms["without"]
    row: dict[str, Any] = {
        "name": measure.name,
        "label": measure.label,
        "primary": measure.primary,
        "higher_is_better": measure.higher_is_better,
        "with": _arm_stats(with_values),
        "without": _arm_stats(without_values),
        "difference": None,
        "interval": None,
        "confidence": confidence,
        "margin": None,
        "status": "too-few",
    }
    if min(len(with_values), len(without_values)) < MIN_SESSIONS_PER_ARM:
        return row
    pooled = float(np.mean([*with_values, *without_values]))
    margin = VERIFIED_MARGIN if measure.name == "verified" else RELATIVE_MARGIN * abs(pooled)
    low, high = bootstrap_interval(with_values, without_values, confidence)
    row.update(
        difference=float(np.mean(with_values) - np.mean(without_values)),
        interval=[low, high],
        margin=margin,
        status=_status(measure, low, high, margin) if margin > 0 or low != high else "no-effect",
    )
    return row


def arms_of(log: Iterable[Mapping[str, Any]], since: datetime | None) -> dict[str, Arm]:
    """Each logged session's arm (its first entry's), for sessions first logged at or after `since`."""
    arms: dict[str, Arm] = {}
    first_at: dict[str, str] = {}
    for entry in log:
        session_id = str(entry["session_id"])
        if session_id not in arms:
            arms[session_id] = entry["arm"]
            first_at[session_id] = str(entry.get("at") or "")
    if since is None:
        return arms
    moment = since if since.tzinfo is None else since.astimezone(UTC)  # naive: read as UTC, like the log
    cutoff = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {sid: arm for sid, arm in arms.items() if first_at[sid] >= cutoff}


def verdict(rows: Sequence[Mapping[str, Any]], counts: Mapping[Arm, int]) -> dict[str, Any]:
    """A plain-language verdict that claims no more than the intervals support."""
    few = min(counts["with"], counts["without"]) < MIN_SESSIONS_PER_ARM
    better = [r["label"] for r in rows if r["status"] == "better"]
    worse = [r["label"] for r in rows if r["status"] == "worse"]
    primary = next(r for r in rows if r["primary"])
    if few:
        status, text = (
            "not-enough",
            (
                f"not enough sessions yet: {counts['with']} with memory and {counts['without']} without; "
                f"at least {MIN_SESSIONS_PER_ARM} in each arm are needed before any interval is computed"
            ),
        )
    elif better and not worse:
        status, text = "helped", "memory helped: with memory, " + "; ".join(better) + " improved"
    elif worse and not better:
        status, text = "hurt", "memory hurt: with memory, " + "; ".join(worse) + " got worse"
    elif better and worse:
        status = "mixed"
        text = f"mixed: better with memory on {'; '.join(better)}, worse on {'; '.join(worse)}"
    elif primary["status"] == "no-effect":
        status, text = (
            "no-effect",
            (
                "no effect detected: the intervals rule out a meaningful difference in verified rate "
                f"(more than {VERIFIED_MARGIN * 100:.0f} points) and show no difference elsewhere"
            ),
        )
    else:
        status, text = (
            "not-enough",
            (
                "not enough sessions yet: no difference is detected, but the intervals are still too wide "
                "to rule one out"
            ),
        )
    return {"status": status, "text": text}


def build_report(
    log: Iterable[Mapping[str, Any]],
    measures: Mapping[str, SessionMeasures],
    *,
    since: datetime | None = None,
    configured_holdout: float | None = None,
) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    arms = arms_of(log, since)
    measured = {sid: arm for sid, arm in arms.items() if sid in measures}
    counts = {arm: sum(1 for a in measured.values() if a == arm) for arm in ARMS}
    confidence = 1 - (1 - FAMILY_CONFIDENCE) / len(MEASURES)
    rows = []
    for measure in MEASURES:
        values: dict[Arm, list[float]] = {"with": [], "without": []}
        for sid, arm in measured.items():
            value = _value(measures[sid], measure.name)
            if value is not None:
                values[arm].append(value)
        rows.append(compare(measure, values, confidence))
    logged = {arm: sum(1 for a in arms.values() if a == arm) for arm in ARMS}
    return {
        "since": since.isoformat() if since else None,
        "configured_holdout": configured_holdout,
        "sessions": {
            "logged": logged,
            "measured": counts,
            "unmeasured": len(arms) - len(measured),
            "observed_holdout": counts["without"] / len(measured) if measured else None,
        },
        "confidence": confidence,
        "family_confidence": FAMILY_CONFIDENCE,
        "bootstrap_samples": BOOTSTRAP_SAMPLES,
        "measures": rows,
        "verdict": verdict(rows, counts),
    }
