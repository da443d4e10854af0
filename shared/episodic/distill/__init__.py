"""Distillers turn a trajectory into a card; `checks` holds the card rules every distiller obeys.

The names below load on first use: every `episodic` command imports this package (scratch memory's
extract), few need the heuristic distiller or the JSON Schema validator behind the checks.

May import: `kernel/`, `plumbing/`, `scrub/`, `parse/`, `embed/`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodic.distill.checks import card_violations, enforce_card, judge_outcome, parse_card_payload
    from episodic.distill.heuristic import HeuristicDistiller

__all__ = ["HeuristicDistiller", "card_violations", "enforce_card", "judge_outcome", "parse_card_payload"]
_HOMES = {"HeuristicDistiller": "episodic.distill.heuristic"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES.get(name, "episodic.distill.checks")), name)
