"""Holes: what is left of a sentence when an identifier, a path or a code span was removed from it.

"The lint error in is a bug", "(line )", "exit status)", "a variable with." read as broken text to the
agent that receives the card. A hole is found by the grammar around the gap, never by the removed word
(rules as data, real examples in tests/unit/test_card_holes.py). `without_holes` drops the clause that holds
one (a bracketed aside, or the part between commas, semicolons or dashes) and keeps the rest only when it
is still a statement.
"""

from __future__ import annotations

import re
from functools import lru_cache

# a word that needs a word after it, directly before punctuation, or before a verb
_NEEDS_OBJECT = r"(?:with|of|for|from|into|via|the|an|called|named|between|than|like|after)"
HOLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("empty brackets", re.compile(r"[(\[{]\s*[)\]}]")),
    (
        "bracket missing its word",
        re.compile(r"(?i)\((?:line|file|in|at|see|from|via|exit code|status|code)\s*[),]"),
    ),
    ("word missing before punctuation", re.compile(rf"(?i)\b{_NEEDS_OBJECT}\s*[,.;:!?)](?!\w)")),
    (
        "word missing before the verb",
        re.compile(r"(?i)\b(?:in|of|for|from|with|into|the|an|at)\s+(?:is|are|was|were)\b"),
    ),
    (
        "two function words in a row",
        re.compile(r"(?i)\b(?:the|an)\s+(?:the|an|a|of|in|to|with|is|was|while|and|or|but)\b"),
    ),
    (
        "two prepositions in a row",
        re.compile(r"(?i)\b(?:in|at|of|from|into)\s+(?:in|at|of|from|with|into)\b(?!-)"),
    ),
    # "Updated Go from to 1.25.6", "The change at now calls …": the removed word sat between the two
    (
        "word missing between two words",
        re.compile(
            r"(?i)\bfrom\s+to\b|\bat\s+now\b|\bbetween\s+and\b|\bto\s+for\b|\bwith\s+as\s+the\b|\bin\s+not\b"
            r"|\bboth\s+and\s*[.,;:]"
        ),
    ),
    ("line number missing", re.compile(r"(?i)\b(?:at|on) line\s*(?:[,.;:)]|$)")),
    ("dangling article at the end", re.compile(r"(?i)\b(?:the|an|with|of|for|from|into)\s*$")),
)
_CLAUSE_SPLIT = re.compile(r"(?<=[,;])\s+|\s+[—–]\s+|\s+-\s+")
_ASIDE = re.compile(r"\s*\([^()]*\)")
MIN_WORDS = 4


def _unbalanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
            if depth < 0:
                return True
    return False


@lru_cache(maxsize=8192)
def hole_breaks(text: str) -> tuple[str, ...]:
    """The names of the hole rules `text` breaks (an unbalanced closing bracket is one too)."""
    found = [name for name, pattern in HOLE_RULES if pattern.search(text)]
    if (")" in text or "]" in text) and _unbalanced(text):
        found.append("closing bracket without its opening")
    return tuple(found)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@lru_cache(maxsize=8192)
def without_holes(text: str) -> str:
    """`text` with every clause holding a hole dropped, sentence by sentence; a sentence that is no longer
    a statement goes whole; "" when nothing is left."""
    if not hole_breaks(text):
        return text
    kept = [s for s in (_sentence_without_holes(part) for part in _SENTENCE_END.split(text)) if s]
    return " ".join(kept)


def _sentence_without_holes(text: str) -> str:
    if not hole_breaks(text):
        return text
    text = _ASIDE.sub(
        lambda m: (
            "" if hole_breaks(m.group(0).strip()[1:-1] + ".") or hole_breaks(m.group(0)) else m.group(0)
        ),
        text,
    )
    if hole_breaks(text):
        ending = "." if text.rstrip().endswith(".") else ""
        kept = [
            part for part in _CLAUSE_SPLIT.split(text) if part and not hole_breaks(part.rstrip(",;") + ending)
        ]
        text = " ".join(kept).strip().rstrip(",;:—–- ")
        if text and ending and not text.endswith((".", "!", "?")):
            text += "."
    text = re.sub(r"\s{2,}", " ", text).strip()
    if hole_breaks(text) or len(text.split()) < MIN_WORDS:
        return ""
    return text
