"""The injection view in the report: a table per card set and fold, and the frontier chart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.evaluation.injection import InjectionFigures, InjectionView

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
    return [*out, ""]


def render_injection_chart(views: dict[str, InjectionView], path: Path) -> None:
    """Targets injected against negatives injected as each bar moves: the frontier to choose on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for label, view in views.items():
        cards = view.card_curve
        axes[0].plot(
            [p["negatives_with_card"] for p in cards],
            [p["target_as_card"] for p in cards],
            marker="o",
            label=f"{label}: strong bar moved",
        )
        axes[0].scatter(
            [view.overall.negatives_with_card], [view.overall.target_as_card], s=120, marker="*", zorder=5
        )
        pointers = view.pointer_curve
        axes[1].plot(
            [p["chars_per_negative"] for p in pointers],
            [p["target_surfaced"] for p in pointers],
            marker="o",
            label=f"{label}: weak bar moved",
        )
        axes[1].scatter(
            [view.overall.chars_per_negative], [view.overall.target_surfaced], s=120, marker="*", zorder=5
        )
    axes[0].set_xlabel("negatives given a full card")
    axes[0].set_ylabel("positives: target given as a full card")
    axes[0].set_title("Full cards (★ the configured bars)")
    axes[1].set_xlabel("characters injected per negative")
    axes[1].set_ylabel("positives: target as a card or a pointer")
    axes[1].set_title("Cards and pointers")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
