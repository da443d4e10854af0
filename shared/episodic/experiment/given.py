"""The experiment read with the injection records: sessions held out against sessions that were given memory,
and among those, sessions that used what they were given against sessions that ignored it. For each measure:
count, mean and its standard error per group, and how many sessions per arm the experiment needs before it
can tell the smallest difference that matters (two-sided 5 %, power 80 %).

A used-against-ignored difference is not an effect of memory (sessions choose what to use); it says where to
look. Only the arms (a hash of the session id) are a randomised comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from episodic.experiment.holdout import Arm
from episodic.experiment.measures import SessionMeasures
from episodic.experiment.report import RELATIVE_MARGIN, VERIFIED_MARGIN
from episodic.kernel.injection_port import InjectionRecord

Z_TWO_SIDED_5 = 1.96
Z_POWER_80 = 0.8416
# (measure, label): the outcome, the time to the first passing check, work thrown away
GIVEN_MEASURES = (
    ("verified", "ended verified (share)"),
    ("tool_calls_to_green", "tool calls, first failing check to passing"),
    ("turns_to_green", "user turns, first failing check to passing"),
    ("reverted_edits", "edits reverted (dead ends undone)"),
)
GROUPS = ("held out", "given memory", "used it", "ignored it")


def mean_and_error(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean and the standard error of the mean (None below two values)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "se": None}
    mean = sum(values) / n
    if n < 2:
        return {"n": n, "mean": mean, "se": None}
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return {"n": n, "mean": mean, "se": math.sqrt(variance / n)}


def sessions_needed(measure: str, values: Sequence[float]) -> int | None:
    """Sessions per arm to detect the smallest difference that matters (as the report's margins)."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    if measure == "verified":
        variance, margin = mean * (1 - mean), VERIFIED_MARGIN
    else:
        variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        margin = RELATIVE_MARGIN * abs(mean)
    if margin <= 0 or variance <= 0:
        return None
    return math.ceil(2 * variance * (Z_TWO_SIDED_5 + Z_POWER_80) ** 2 / margin**2)


def group_of(arm: Arm, records: Sequence[InjectionRecord]) -> list[str]:
    """The groups a session belongs to (a session given memory is also 'used it' or 'ignored it' once read)."""
    if arm == "without":
        return ["held out"]
    if not records:
        return []
    groups = ["given memory"]
    read = [r for r in records if r.use is not None]
    if any(r.use != "ignored" for r in read):
        groups.append("used it")
    elif read:
        groups.append("ignored it")
    return groups


def given_section(
    arms: Mapping[str, Arm],
    records: Mapping[str, Sequence[InjectionRecord]],
    measures: Mapping[str, SessionMeasures],
) -> dict[str, Any]:
    """The groups' figures, JSON-ready."""
    members: dict[str, list[SessionMeasures]] = {g: [] for g in GROUPS}
    for session_id, arm in arms.items():
        if session_id in measures:
            for group in group_of(arm, records.get(session_id, ())):
                members[group].append(measures[session_id])
    rows = []
    for name, label in GIVEN_MEASURES:
        values = {
            g: [float(v) for m in ms if (v := getattr(m, name)) is not None] for g, ms in members.items()
        }
        pooled = values["held out"] + values["given memory"]
        rows.append(
            {
                "name": name,
                "label": label,
                "groups": {g: mean_and_error(v) for g, v in values.items()},
                "sessions_needed_per_arm": sessions_needed(name, pooled),
            }
        )
    return {"sessions": {g: len(ms) for g, ms in members.items()}, "measures": rows}


def given_lines(section: Mapping[str, Any]) -> list[str]:
    """The section as text for `episodic experiment report`."""
    counts = section["sessions"]
    lines = [
        "with the injection records: "
        + ", ".join(f"{g} {counts[g]}" for g in GROUPS)
        + " sessions (used/ignored: sessions choose, so not an effect of memory)"
    ]
    for row in section["measures"]:
        cells = []
        for group in GROUPS:
            stats = row["groups"][group]
            if stats["mean"] is None:
                cells.append(f"{group} -")
            else:
                se = "" if stats["se"] is None else f" ± {stats['se']:.2f}"
                cells.append(f"{group} {stats['mean']:.2f}{se} (n {stats['n']})")
        needed = row["sessions_needed_per_arm"]
        need = f"; needs about {needed} sessions per arm" if needed else ""
        lines.append(f"  {row['label']}: " + "; ".join(cells) + need)
    return lines
