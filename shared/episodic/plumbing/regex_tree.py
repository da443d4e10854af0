"""The parse tree of a compiled regex, for prefilters that only make scanning faster — or None.

CPython keeps its regex parser private (`re._parser`, `re._constants`) and changes it within a minor
version: 3.11.0–3.11.2 have no `MAXWIDTH`, and a later release may rename anything. So this is the one
place that touches it, every use is guarded, and a caller that gets None (or whose walk of the tree
fails) scans with the plain pattern, which finds the same matches (`tests/unit/plumbing/test_regex_tree.py`
pins that with the private modules taken away)."""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any

# A longer bounded match is treated as unbounded: only a little speed is lost. Below every CPython's
# "unbounded" marker (MAXREPEAT on 3.11.0–3.11.2, MAXWIDTH later).
_MAX_REACH = 1 << 16

# Exceptions a walk over a tree whose shape changed can raise; the caller then does without.
TREE_ERRORS = (AttributeError, TypeError, ValueError, IndexError, KeyError, LookupError)


def _private(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_parser = _private("re._parser")
OPS: Any = _private("re._constants")  # opcode names (LITERAL, BRANCH, …); None where absent


def parse(pattern: re.Pattern[str]) -> Any | None:
    """The pattern's parse tree (a sequence of (opcode, argument) pairs), or None when unavailable."""
    if _parser is None or OPS is None:
        return None
    try:
        return _parser.parse(pattern.pattern, pattern.flags)
    except (*TREE_ERRORS, re.error):
        return None


def parse_text(pattern: str, flags: int = 0) -> Any | None:
    """The parse tree of a pattern's source text, or None when unavailable or invalid."""
    if _parser is None or OPS is None:
        return None
    try:
        return _parser.parse(pattern, flags)
    except (*TREE_ERRORS, re.error):
        return None


def widths(pattern: re.Pattern[str]) -> tuple[int, int | None] | None:
    """(shortest, longest) length of a match, longest None when unbounded; None when unknown."""
    tree = parse(pattern)
    if tree is None:
        return None
    try:
        low, high = tree.getwidth()
    except TREE_ERRORS:
        return None
    return int(low), (int(high) if high < _MAX_REACH else None)
