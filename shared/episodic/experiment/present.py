"""The experiment report as text: a table of both arms, the verdict, and a chart of each difference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from episodic.cards.present import counted

BAR_WIDTH = 24
AXIS_WIDTH = 41


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _bar(value: float | None, top: float) -> str:
    filled = 0 if value is None or top <= 0 else round(BAR_WIDTH * max(value, 0.0) / top)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def interval_axis(low: float, high: float, margin: float) -> str:
    """The interval on an axis centred on 0 ('|'), the no-effect margin marked ':'."""
    span = max(abs(low), abs(high), margin, 1e-12) * 1.1
    cells = [" "] * AXIS_WIDTH

    def at(x: float) -> int:
        return min(AXIS_WIDTH - 1, max(0, round((x + span) / (2 * span) * (AXIS_WIDTH - 1))))

    for x in (-margin, margin):
        cells[at(x)] = ":"
    for i in range(at(low), at(high) + 1):
        cells[i] = "─"
    cells[at(0.0)] = "|" if cells[at(0.0)] != "─" else "┼"
    cells[at(low)], cells[at(high)] = "[", "]"
    return "".join(cells)


def report_lines(report: Mapping[str, Any]) -> list[str]:
    sessions = report["sessions"]
    measured, logged = sessions["measured"], sessions["logged"]
    configured = report["configured_holdout"]
    observed = sessions["observed_holdout"]
    lines = [
        f"experiment since {report['since'] or 'the start'}: {counted(measured['with'], 'session')} with memory, "
        f"{measured['without']} without (holdout {'off' if configured is None else f'{configured:.0%}'}"
        f"{'' if observed is None else f', observed {observed:.0%}'})",
    ]
    if unmeasured := sessions["unmeasured"]:
        lines.append(
            f"  {counted(unmeasured, 'logged session')} {'is' if unmeasured == 1 else 'are'} not measured yet "
            f"(logged {logged['with']} with, "
            f"{logged['without']} without): their transcripts have not been indexed or harvested here"
        )
    lines.append(f"verdict: {report['verdict']['text']}")
    lines.append(
        f"intervals: {report['confidence']:.2%} percentile bootstrap of the difference in means "
        f"({report['bootstrap_samples']} resamples; {report['family_confidence']:.0%} for all measures together)"
    )
    lines.append("")
    for row in report["measures"]:
        w, wo = row["with"], row["without"]
        top = max(w["mean"] or 0.0, wo["mean"] or 0.0)
        lines.append(f"{row['label']}{' (primary)' if row['primary'] else ''}: {row['status']}")
        for name, stats in (("with", w), ("without", wo)):
            lines.append(
                f"  {name:<8} {_bar(stats['mean'], top)} mean {_number(stats['mean'])}, "
                f"median {_number(stats['median'])} (n {stats['n']})"
            )
        if row["interval"] is not None:
            low, high = row["interval"]
            lines.append(
                f"  with - without {_number(row['difference'])} [{_number(low)}, {_number(high)}]  "
                f"{interval_axis(low, high, row['margin'])}"
            )
    if report.get("given"):
        from episodic.experiment.given import given_lines

        lines += ["", *given_lines(report["given"])]
    lines += [
        "",
        "reading it: '|' is no difference, ':' the smallest difference that matters; an interval clear of",
        "'|' is an effect, one inside the ':' marks is no effect, anything else needs more sessions.",
    ]
    return lines
