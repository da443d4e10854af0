"""The injection view in the report: a table per card set and fold, and the frontier chart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.evaluation.injection import InjectionFigures, InjectionView, McpFigures

CHART_NAME = "injection.png"


def _row(name: str, f: InjectionFigures) -> str:
    right = "–" if f.cards_that_are_target is None else f"{f.cards_that_are_target:.2f}"
    return (
        f"| {name} | {f.target_as_card:.3f} | {f.target_surfaced:.3f} | {f.cards_per_positive:.2f} / "
        f"{f.pointers_per_positive:.2f} | {right} | {f.negatives_with_card:.3f} | {f.negatives_with_anything:.3f} "
        f"| {f.cards_per_negative:.2f} / {f.pointers_per_negative:.2f} | {f.chars_per_negative:.0f} "
        f"| {f.positives} / {f.negatives} |"
    )


def render_injection(views: dict[str, InjectionView]) -> list[str]:
    if not views:
        return []
    out = [
        "## What the hook injects (the injection view)",
        "",
        "Positives: target injected as a full card, as a card or a pointer, cards / pointers per prompt, "
        "share of injected cards that are the target. Negatives (no session covers them): share with a card, "
        "with anything, cards / pointers per prompt, characters injected per prompt.",
        "",
        "| card set (bars) | target as card | target as card or pointer | cards / pointers | cards that are "
        "the target | negatives with a card | negatives with anything | cards / pointers | chars per negative "
        "| n pos / neg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, view in views.items():
        bars = f"strong ≥ {view.strong_score:g}, weak ≥ {view.weak_score:g}"
        out.append(_row(f"**{label}** ({bars})", view.overall))
        out += [_row(f"{label}, fold {fold}", figures) for fold, figures in view.by_fold.items()]
    out += [
        "",
        "## What an agent gets from `search_traces` (its defaults: only `query` given)",
        "",
        "Positives: target among the results (a card or a labelled entry), first, as a strong card; results "
        'per prompt. Negatives: share given a strong card, anything, or the explicit "no match" answer; '
        "characters returned per negative.",
        "",
        "| card set | target returned | target first | target as card | results per positive | negatives "
        "with a card | negatives with anything | no match said | chars per negative | n pos / neg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, view in views.items():
        out.append(_mcp_row(f"**{label}**", view.mcp))
        out += [_mcp_row(f"{label}, fold {fold}", figures) for fold, figures in view.mcp_by_fold.items()]
    return [*out, "", *render_leave_one_out(views)]


def _share(value: float, se: float) -> str:
    return f"{value:.3f} ± {se:.3f}"


def render_leave_one_out(views: dict[str, InjectionView]) -> list[str]:
    """Hand negatives beside leave-one-out negatives (each positive with its target and cousins left out)."""
    out = [
        "## Negatives: by hand and leave-one-out",
        "",
        "Leave-one-out: every positive asked again with its target and its cousins left out of the store, so "
        "any full card is a neighbour shown as the answer. Shares ± one standard error.",
        "",
        "| card set | hook: hand negatives with a card | hook: leave-one-out with a card | hook: hand with "
        "anything | hook: leave-one-out with anything | search_traces: hand with a card | search_traces: "
        "leave-one-out with a card | n hand / leave-one-out |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, view in views.items():
        groups: list[
            tuple[str, InjectionFigures, InjectionFigures | None, McpFigures | None, McpFigures | None]
        ]
        groups = [(f"**{label}**", view.overall, view.loo, view.mcp, view.mcp_loo)]
        groups += [
            (f"{label}, fold {fold}", view.by_fold[fold], view.loo_by_fold.get(fold), view.mcp_by_fold.get(fold),
             view.mcp_loo_by_fold.get(fold))
            for fold in view.by_fold
        ]  # fmt: skip
        for name, hand, loo, mcp, mcp_loo in groups:
            if loo is None or mcp is None or mcp_loo is None:
                continue
            out.append(
                f"| {name} | {_share(hand.negatives_with_card, hand.negatives_with_card_se)} | "
                f"{_share(loo.negatives_with_card, loo.negatives_with_card_se)} | "
                f"{_share(hand.negatives_with_anything, hand.negatives_with_anything_se)} | "
                f"{_share(loo.negatives_with_anything, loo.negatives_with_anything_se)} | "
                f"{_share(mcp.negatives_with_card, mcp.negatives_with_card_se)} | "
                f"{_share(mcp_loo.negatives_with_card, mcp_loo.negatives_with_card_se)} | "
                f"{hand.negatives} / {loo.negatives} |"
            )
    return [*out, ""]


def _mcp_row(name: str, f: McpFigures) -> str:
    return (
        f"| {name} | {f.target_returned:.3f} | {f.target_first:.3f} | {f.target_as_card:.3f} | "
        f"{f.results_per_positive:.2f} | {f.negatives_with_card:.3f} | {f.negatives_with_anything:.3f} | "
        f"{f.no_match_said:.3f} | {f.chars_per_negative:.0f} | {f.positives} / {f.negatives} |"
    )


# (curve, x, y, what moved, x label, y label, title): one panel each
PANELS = (
    ("card_curve", "negatives_with_card", "target_as_card", "strong bar moved", "negatives given a full card",
     "positives: target given as a full card", "Full cards (★ the configured bars)"),
    ("pointer_curve", "chars_per_negative", "target_surfaced", "weak bar moved", "characters injected per negative",
     "positives: target as a card or a pointer", "Cards and pointers"),
)  # fmt: skip


def render_injection_chart(views: dict[str, InjectionView], path: Path) -> None:
    """Targets injected against negatives injected as each bar moves: the frontier to choose on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, (curve, x, y, moved, x_label, y_label, title) in zip(axes, PANELS, strict=True):
        for label, view in views.items():
            points = getattr(view, curve)
            ax.plot([p[x] for p in points], [p[y] for p in points], marker="o", label=f"{label}: {moved}")
            configured = view.overall.model_dump()
            ax.scatter([configured[x]], [configured[y]], s=120, marker="*", zorder=5)
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
