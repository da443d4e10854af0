"""The human report of a run: a markdown table with standard errors, tie/winner statements, a chart."""

from __future__ import annotations

from pathlib import Path

from episodic.distill.readability import summary_line
from episodic.evaluation.injection_report import CHART_NAME as INJECTION_CHART
from episodic.evaluation.injection_report import render_injection, render_injection_chart
from episodic.evaluation.metrics import SystemMetrics
from episodic.evaluation.runner import EvalResult

REPORT_NAME = "report.md"
CHART_NAME = "chart.png"


def _cell(value: float, se: float) -> str:
    return f"{value:.3f} ± {se:.3f}"


def _table(rows: dict[str, SystemMetrics], k: int) -> list[str]:
    lines = [
        f"| system | recall@1 | recall@{k} | MRR | n |",
        "|---|---|---|---|---|",
    ]
    for name, m in rows.items():
        lines.append(
            f"| {name} | {_cell(m.recall_at_1, m.se_recall_at_1)} | {_cell(m.recall_at_k, m.se_recall_at_k)} "
            f"| {_cell(m.mrr, m.se_mrr)} | {m.n} |"
        )
    return lines


def _headline(result: EvalResult) -> list[str]:
    """The best system on recall@k, and which systems it beats or ties under the two-SE rule."""
    if not result.systems:
        return []
    best = max(result.systems, key=lambda n: result.systems[n].metrics.recall_at_k)
    tied = [
        c.b if c.a == best else c.a for c in result.comparisons if best in (c.a, c.b) and c.winner is None
    ]
    beaten = [c.b for c in result.comparisons if c.winner == best]
    lines = [f"Best recall@{result.k}: **{best}**."]
    if tied:
        lines.append(f"Tied with it (difference under two standard errors): {', '.join(tied)}.")
    if beaten:
        lines.append(f"It beats: {', '.join(beaten)}.")
    return [" ".join(lines)]


def _split_table(result: EvalResult) -> list[str]:
    """recall@k per fold of the two-fold split by target session: tune on one fold, read the other."""
    folds = sorted({g for r in result.systems.values() for g in r.by_fold})
    if len(folds) < 2:
        return []
    k = result.k
    head = " | ".join(f"recall@{k} fold {f} (n)" for f in folds)
    lines = [
        f"### Two-fold split by target session (recall@{k})",
        "",
        f"| system | {head} |",
        "|---|" + "---|" * len(folds),
    ]
    for name, r in result.systems.items():
        cells = " | ".join(
            f"{r.by_fold[f].recall_at_k:.3f} ± {r.by_fold[f].se_recall_at_k:.3f} ({r.by_fold[f].n})"
            if f in r.by_fold
            else "–"
            for f in folds
        )
        lines.append(f"| {name} | {cells} |")
    return [*lines, ""]


def render_summary(result: EvalResult) -> str:
    """The results table with standard errors, the winner/tie statement, per-group tables, notes."""
    k = result.k
    out = [
        f"## Results (recall@1, recall@{k}, MRR; ± one standard error)",
        "",
        *_table({n: r.metrics for n, r in result.systems.items()}, k),
        "",
        *_headline(result),
        "",
        f"Two systems are a tie when their recall@{k} differ by less than two standard errors of the "
        "difference, sqrt(se_a² + se_b²) (binomial SE per system; conservative for paired runs).",
        "",
    ]
    groups = sorted({g for r in result.systems.values() for g in r.by_difficulty})
    for group in groups:
        rows = {n: r.by_difficulty[group] for n, r in result.systems.items() if group in r.by_difficulty}
        out += [f"### {group} queries", "", *_table(rows, k), ""]
    out += _split_table(result)
    sets = result.corpus.get("card_sets") or {}
    if sets:
        out += ["## Card sets", ""]
        for label, summary in sets.items():
            facts = ", ".join(f"{key} {value}" for key, value in summary.items() if key != "invalid")
            out.append(f"- **{label}**: {facts}")
            for bad in summary.get("invalid", []):
                out.append(f"  - refused {bad['file']}: {bad['reason']}")
        out.append("")
    if result.readability:
        out += [
            "## Readability of the cards",
            "",
            *(f"- {summary_line(label, r)}" for label, r in result.readability.items()),
            "",
        ]
    if result.second_stage:
        from episodic.evaluation.second_stage import second_stage_line

        out += [
            "## The second stage's cost",
            "",
            *(second_stage_line(label, summary) for label, summary in result.second_stage.items()),
            "",
        ]
    out += render_injection(result.injection)
    noted = {n: r.notes for n, r in result.systems.items() if r.notes}
    if noted:
        out += ["## Notes", ""]
        for name, notes in noted.items():
            out.append(f"- **{name}**: " + ", ".join(f"{key} = {value}" for key, value in notes.items()))
        out.append("")
    return "\n".join(out)


def render_markdown(result: EvalResult) -> str:
    k = result.k
    corpus = result.corpus
    out = [
        "# Retrieval evaluation",
        "",
        f"Command: `{result.command}`" if result.command else "",
        "",
        f"Corpus: {corpus.get('sessions')} sessions from {corpus.get('session_files')} session files "
        f"({corpus.get('source_bytes', 0) / 1e6:.1f} MB); {corpus.get('not_episodes')} files not episodes "
        f"{corpus.get('not_episode_reasons') or ''}; cards: "
        + ", ".join(f"`{label}`" for label in (corpus.get("card_sets") or {"distilled": None}))
        + f" (distiller `{corpus.get('distiller')}`); "
        f"embedder `{result.embedder}`; {len(result.queries)} queries"
        + (
            f", {len(result.missing_targets)} with a target not in the corpus (counted as misses)"
            if result.missing_targets
            else ""
        )
        + ".",
        "",
        render_summary(result),
    ]
    out += ["## Systems", ""]
    out += [f"- **{n}**: {r.description} ({r.seconds:.1f} s)" for n, r in result.systems.items()]
    out += ["", "## All pairs", ""]
    out += [f"- {c.statement}" for c in result.comparisons]
    missed = [q for q in result.queries if any(r is None or r > k for r in q.ranks.values())]
    if missed:
        names = list(result.systems)
        out += ["", f"## Per-query ranks (queries missed at {k} by at least one system)", ""]
        out += [
            "| id | difficulty | " + " | ".join(names) + " | query |",
            "|---|---|" + "---|" * (len(names) + 1),
        ]
        for q in missed:
            cells = " | ".join("–" if q.ranks[n] is None else str(q.ranks[n]) for n in names)
            out.append(f"| {q.id} | {q.difficulty or ''} | {cells} | {q.query.replace('|', '/')} |")
    timing = ", ".join(f"{key} {value:.1f} s" for key, value in result.seconds.items())
    out += ["", f"Wall time: {timing}.", ""]
    return "\n".join(out)


def render_chart(result: EvalResult, path: Path) -> None:
    """Grouped bars: recall@1, recall@k and MRR per system, with one-standard-error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(result.systems)
    metrics = [result.systems[n].metrics for n in names]
    series = [
        ("recall@1", [m.recall_at_1 for m in metrics], [m.se_recall_at_1 for m in metrics]),
        (f"recall@{result.k}", [m.recall_at_k for m in metrics], [m.se_recall_at_k for m in metrics]),
        ("MRR", [m.mrr for m in metrics], [m.se_mrr for m in metrics]),
    ]
    x = np.arange(len(names))
    width = 0.26
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(names) + 2), 4.5))
    for offset, (label, values, errors) in zip((-width, 0.0, width), series, strict=True):
        ax.bar(x + offset, values, width, yerr=errors, capsize=3, label=label)
    ax.set_xticks(x, names, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (± 1 SE)")
    ax.set_title(f"Retrieval on {len(result.queries)} queries, {result.corpus.get('sessions')} sessions")
    ax.legend(loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(result: EvalResult, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    report = folder / REPORT_NAME
    chart = folder / CHART_NAME
    report.write_text(render_markdown(result), encoding="utf-8")
    render_chart(result, chart)
    if result.injection:
        render_injection_chart(result.injection, folder / INJECTION_CHART)
    return report, chart
