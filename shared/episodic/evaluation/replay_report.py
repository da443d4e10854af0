"""The replay's report: a table per card set and stage (and fold), the cards given most, and a chart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.evaluation.replay import ReplayFigures, ReplayResult

REPORT_NAME = "report.md"
CHART_NAME = "chart.png"
HUB_SHARE = 0.01  # a card given on more than this share of real prompts is a hub


def _row(name: str, f: ReplayFigures) -> str:
    return (
        f"| {name} | {f.cards_per_prompt:.3f} ± {f.se_cards_per_prompt:.3f} | {f.prompts_with_card:.3f} "
        f"| {f.pointers_per_prompt:.3f} ± {f.se_pointers_per_prompt:.3f} | {f.prompts_with_anything:.3f} "
        f"| {f.chars_per_prompt:.0f} | {f.card_repeats} / {f.repeats} | {f.max_card_share:.3f} / "
        f"{f.max_share:.3f} | {f.cards_over_one_percent} | {f.prompts} ({f.sessions}) |"
    )


def render_replay(result: ReplayResult, heading: str = "##") -> list[str]:
    """The replay's tables as markdown lines (also a section of the yardsticks report)."""
    skipped = ", ".join(f"{reason} {count}" for reason, count in sorted(result.skipped.items()))
    out = [
        f"{heading} The replay of real prompts",
        "",
        f"{result.sessions_replayed} of {result.sessions} sessions replayed in order of their start, each "
        f"against the sessions that ended before it started; {result.prompts_answered} of their "
        f"{result.prompts} real prompts are ones the hook answers (skipped: {skipped or 'none'})."
        + (
            f" {len(result.untimed_sessions)} sessions have no times and were left out."
            if result.untimed_sessions
            else ""
        ),
        "",
        "Per prompt: full cards given (± one standard error), share of prompts given a full card, pointers, share "
        "given anything, characters injected. Repeats: (session, card) pairs given two or more times in one "
        "session, as full cards / as anything. Hubs: the largest share of prompts one card was given, as a full "
        f"card / as anything, and the number of cards given on more than {HUB_SHARE:.0%} of the prompts.",
        "",
        "| card set, stage (second stage) | full cards per prompt | prompts with a card | pointers per prompt "
        "| prompts with anything | chars per prompt | same card twice in a session (card / any) | top card's "
        "share (card / any) | cards over 1 % | prompts (sessions) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in result.runs:
        out.append(_row(f"**{run.card_set}, {run.stage}** ({run.reranker})", run.overall))
        out += [_row(f"{run.card_set}, {run.stage}, fold {fold}", f) for fold, f in run.by_fold.items()]
    out += ["", f"{heading}# The cards given most (share of the replayed prompts)", ""]
    out += ["| card set, stage | top cards: session (as anything / as a full card) |", "|---|---|"]
    for run in result.runs:
        top = ", ".join(f"`{c.session_id[:8]}` {c.share:.3f} / {c.card_share:.3f}" for c in run.overall.top)
        out.append(f"| {run.card_set}, {run.stage} | {top or '–'} |")
    return [*out, ""]


def render_replay_markdown(result: ReplayResult) -> str:
    timing = ", ".join(f"{key} {value:.1f} s" for key, value in result.seconds.items())
    return "\n".join(
        [
            "# Replay of real prompts",
            "",
            f"Command: `{result.command}`" if result.command else "",
            "",
            *render_replay(result),
            f"Wall time: {timing}.",
            "",
        ]
    )


def render_replay_chart(result: ReplayResult, path: Path) -> None:
    """Left: what each prompt got per card set and stage (± 1 SE); right: the most-given cards' shares."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    runs = result.runs
    names = [f"{r.card_set}\n{r.stage}" for r in runs]
    series = [
        ("full cards per prompt", "cards_per_prompt", "se_cards_per_prompt"),
        ("pointers per prompt", "pointers_per_prompt", "se_pointers_per_prompt"),
        ("prompts with anything", "prompts_with_anything", "se_prompts_with_anything"),
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    x = np.arange(len(runs))
    width = 0.26
    for offset, (label, value, se) in zip((-width, 0.0, width), series, strict=True):
        values = [getattr(r.overall, value) for r in runs]
        errors = [getattr(r.overall, se) for r in runs]
        left.bar(x + offset, values, width, yerr=errors, capsize=3, label=label)
    left.set_xticks(x, names, fontsize=8)
    left.set_ylabel("per real prompt (± 1 SE)")
    left.set_title(f"What the hook gives, {result.prompts_answered} real prompts")
    left.legend(fontsize=8)
    left.grid(axis="y", alpha=0.3)
    for run in runs:
        shares = [c.share for c in run.overall.top]
        right.plot(range(1, len(shares) + 1), shares, marker="o", label=f"{run.card_set}, {run.stage}")
    right.axhline(HUB_SHARE, color="grey", linestyle="--", label=f"{HUB_SHARE:.0%} of prompts")
    right.set_xlabel("card, by how often it was given (1: most)")
    right.set_ylabel("share of prompts given it (card or pointer)")
    right.set_title("Hubs: the cards given most")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_replay_report(result: ReplayResult, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    report, chart = folder / REPORT_NAME, folder / CHART_NAME
    report.write_text(render_replay_markdown(result), encoding="utf-8")
    render_replay_chart(result, chart)
    return report, chart
