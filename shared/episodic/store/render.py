"""The three renderings of a card (T3's transformations), each embedded as its own vector."""

from __future__ import annotations

from episodic.kernel.models import Card


def _lines(title: str, items: list[str]) -> str:
    return f"{title}: " + "; ".join(items) if items else ""


def render(card: Card, rendering: str) -> str:
    """struct = problem + steps; semantic = problem + decisions + insight; reflect = problem + lessons."""
    if rendering == "struct":
        parts = [card.problem, _lines("Steps", card.steps)]
    elif rendering == "semantic":
        parts = [card.problem, _lines("Decisions", card.key_decisions), card.insight]
    elif rendering == "reflect":
        parts = [
            card.problem,
            _lines("Dead ends", card.dead_ends),
            _lines("Misleading", card.misleading_intuitions),
            _lines("Checks", card.critical_checks),
        ]
    else:
        raise ValueError(f"unknown rendering {rendering!r}")
    return "\n".join(p for p in parts if p)


def keyword_text(card: Card) -> str:
    """Every field, for the keyword (BM25) half of hybrid search."""
    fields = [
        card.problem,
        *card.steps,
        *card.key_decisions,
        card.insight,
        *card.dead_ends,
        *card.misleading_intuitions,
        *card.critical_checks,
        " ".join(card.tags),
    ]
    return "\n".join(f for f in fields if f)
