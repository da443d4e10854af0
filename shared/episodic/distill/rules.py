"""Wording rules as data: a named pattern plus the literal words it needs, derived from the pattern.

A `Rule` scans a text with its regex only when one of `words` occurs in the lowercased text. The words
are computed from the regex's parse tree (`required_words`), never kept by hand, so they cannot drift
from the pattern; non-ASCII text skips the prefilter (case folding can turn "ſ" into "s")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

_PREFILTER_MIN_CHARS = 400  # a shorter text is regex-scanned directly: the word loop would cost more
_MIN_WORD_CHARS = 2  # a one-letter prefilter word rejects almost nothing: no prefilter instead
_COMMON_WORDS = frozenset({"the", "a", "an", "to", "of", "is", "it", "in", "on", "and", "or", "i"})


@lru_cache(maxsize=1024)
def lower(text: str) -> str:
    return text.lower()  # the same message is prefiltered by several rules


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective candidate: longest shortest word, then fewest words."""
    usable = [c for c in candidates if c and min(map(len, c)) >= _MIN_WORD_CHARS]
    if not usable:
        return None
    return max(usable, key=lambda c: (min(map(_selectivity, c)), -len(c)))


def _selectivity(word: str) -> int:
    core = word.strip()
    return 0 if core in _COMMON_WORDS else len(core)


def _needs(items: Any) -> frozenset[str] | None:
    """Words one of which every match of this (sub)pattern contains, or None when not simply known."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            candidates.append(frozenset({"".join(run)}))
            run.clear()

    for op, arg in items:
        if op is sre_constants.LITERAL:
            run.append(chr(arg).lower())
            continue
        if op is sre_constants.AT:  # zero-width (\b, ^, $): the literal run goes on
            continue
        flush()
        if op is sre_constants.SUBPATTERN:
            sub = _needs(arg[-1])
        elif op is sre_constants.BRANCH:
            branches = [_needs(branch) for branch in arg[1]]
            sub = None if any(b is None for b in branches) else frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
            sub = _needs(arg[2]) if arg[0] >= 1 else None
        else:  # a class, any character, a lookaround, a group reference: no literal known
            sub = None
        if sub is not None:
            candidates.append(sub)
    flush()
    return _best(candidates)


def required_words(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Lowercase literals one of which occurs in every match of `pattern` (empty: no prefilter)."""
    found = _needs(sre_parser.parse(pattern.pattern, pattern.flags))
    return tuple(sorted(found)) if found else ()


@dataclass(frozen=True)
class Rule:
    """A named wording rule; `words` are derived from `pattern` (see `required_words`)."""

    name: str
    pattern: re.Pattern[str]
    words: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", required_words(self.pattern))

    def could_match(self, text: str) -> bool:
        if not self.words or len(text) < _PREFILTER_MIN_CHARS or not text.isascii():
            return True
        low = lower(text)
        for word in self.words:  # noqa: SIM110 - a plain loop: cheaper than any() over a generator
            if word in low:
                return True
        return False

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self.could_match(text) else None


def rule(name: str, pattern: str) -> Rule:
    return Rule(name, re.compile(pattern))
