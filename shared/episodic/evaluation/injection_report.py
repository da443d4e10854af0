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
