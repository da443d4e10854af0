"""The yardsticks report: one markdown table (rows: yardstick and measure; columns: card set and stage) and
one chart with a panel per row, each bar with its standard error."""

from __future__ import annotations

from pathlib import Path

from episodic.evaluation.replay_report import render_replay
from episodic.evaluation.yardsticks import Cell, YardsticksResult

REPORT_NAME = "report.md"
CHART_NAME = "chart.png"
ARROWS = {"higher": " ↑", "lower": " ↓", "": ""}


def render_cell(cell: Cell | None, counts: bool = False) -> str:
    if cell is None:
        return "–"

    def number(value: float) -> str:
        return f"{value:.0f}" if counts else f"{value:.3f}"

    text = number(cell.value) + (f" ± {cell.se:.3f}" if cell.se is not None else "")
    folds = " / ".join(f"{fold} {number(f.value)}" for fold, f in sorted(cell.folds.items()))
    return f"{text} ({folds})" if folds else text


def render_table(result: YardsticksResult) -> list[str]:
    out = [
        "| yardstick | measure | n | " + " | ".join(result.columns) + " |",
        "|---|---|---|" + "---|" * len(result.columns),
    ]
    for row in result.rows:
        sizes = sorted({c.n for c in row.cells.values()})
        n = "/".join(str(s) for s in sizes)
        cells = " | ".join(render_cell(row.cells.get(c), row.counts) for c in result.columns)
        out.append(f"| {row.yardstick} | {row.measure}{ARROWS[row.better]} | {n} | {cells} |")
    return out


def render_yardsticks(result: YardsticksResult) -> str:
    timing = ", ".join(f"{key} {value:.0f} s" for key, value in result.seconds.items())
    notes = [*(f"- {note}" for note in result.notes), ""] if result.notes else []
    out = [
        "# Every yardstick side by side",
        "",
        f"Command: `{result.command}`" if result.command else "",
        "",
        "Each cell: the figure ± one standard error (binomial for a share, of the mean for a per-prompt "
        "figure; none for a count), then per fold (A / B: the two-fold split by target session, or by the "
        "receiving session in the replay). ↑ higher is better, ↓ lower is better. *first stage*: the second "
        "stage off (`reranker = none`); *shipped*: the configured one. recall@1 is the default ranking "
        "(`hybrid`, all outcomes); the hook's figures are what it injects (verified cards only); "
        "leave-one-out negatives are the positives asked again with their target and cousins left out.",
        "",
        *render_table(result),
        "",
        *notes,
    ]
    if result.replay is not None:
        out += render_replay(result.replay)
    out += [f"Wall time: {timing}.", ""]
    return "\n".join(out)


def render_yardsticks_chart(result: YardsticksResult, path: Path) -> None:
    """A small panel per row: one bar per column with its standard error."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.rows
    width = 4
    height = max(1, math.ceil(len(rows) / width))
    fig, axes = plt.subplots(height, width, figsize=(4.2 * width, 3.0 * height), squeeze=False)
    # one hue per card set: the first stage light, what ships dark
    palette = plt.get_cmap("tab20")
    colours = [palette((i // 2) * 2 % 20 + (0 if i % 2 else 1)) for i in range(len(result.columns))]
    for ax, row in zip(axes.flat, rows, strict=False):
        cells = [row.cells.get(c) for c in result.columns]
        values = [c.value if c else 0.0 for c in cells]
        errors = [c.se if c and c.se is not None else 0.0 for c in cells]
        shown = errors if any(errors) else None
        ax.bar(range(len(cells)), values, yerr=shown, capsize=3, color=colours[: len(cells)])
        ax.set_xticks(range(len(cells)), [c.replace(", ", "\n") for c in result.columns], fontsize=7)
        ax.set_title(f"{row.yardstick}: {row.measure}{ARROWS[row.better]}", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(rows) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_yardsticks(result: YardsticksResult, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    report, chart = folder / REPORT_NAME, folder / CHART_NAME
    report.write_text(render_yardsticks(result), encoding="utf-8")
    render_yardsticks_chart(result, chart)
    return report, chart
