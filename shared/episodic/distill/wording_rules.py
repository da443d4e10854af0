"""Wording rules as data: a named pattern plus the literal words it needs, derived from the pattern.

A `Rule` scans a text with its regex only where one of `words` occurs in the lowercased text. The words
are computed from the regex's parse tree (`required_words`), never kept by hand, so they cannot drift
from the pattern. When no match can reach past a newline (`stays_on_line`), only the lines holding a
word are scanned (`Rule.search`, `Rule.finditer`: the same matches as the plain pattern). A text whose
lowercase hides a case-insensitive letter ("ſ" matches "s") is scanned whole."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import episodic.plumbing.regex_tree as regex_tree
from episodic.plumbing.regex_tree import OPS, TREE_ERRORS
from episodic.scrub.finder import LiteralFinder

_PREFILTER_MIN_CHARS = 30  # a shorter text is regex-scanned directly: finding words would cost more
_MIN_WORD_CHARS = 2  # a one-letter prefilter word rejects almost nothing: no prefilter instead
_COMMON_WORDS = frozenset({"the", "a", "an", "to", "of", "is", "it", "in", "on", "and", "or", "i"})


# Non-ASCII characters that a case-insensitive pattern pairs with an ASCII letter although `str.lower`
# does not turn them into it (`tests/unit/distill/test_distill_rules.py` checks every code point).
_CASE_TWINS = "\u0130\u0131\u017f\u212a"  # İ ı ſ K


@lru_cache(maxsize=1024)
def lower(text: str) -> str:
    return text.lower()  # the same message is prefiltered by several rules


@lru_cache(maxsize=1024)
def folded(text: str) -> str | None:
    """`text.lower()` where a lowercase word found in it is found at the same place by a case-insensitive
    pattern; None when a character could match a word letter unseen (then the text is scanned whole)."""
    if text.isascii():
        return lower(text)
    for twin in _CASE_TWINS:
        if twin in text:
            return None
    low = lower(text)
    return low if len(low) == len(text) else None


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
        if op is OPS.LITERAL:
            run.append(chr(arg).lower())
            continue
        if op is OPS.AT:  # zero-width (\b, ^, $): the literal run goes on
            continue
        flush()
        if op is OPS.SUBPATTERN:
            sub = _needs(arg[-1])
        elif op is OPS.BRANCH:
            branches = [_needs(branch) for branch in arg[1]]
            sub = None if any(b is None for b in branches) else frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in _REPEATS:
            sub = _needs(arg[2]) if arg[0] >= 1 else None
        else:  # a class, any character, a lookaround, a group reference: no literal known
            sub = None
        if sub is not None:
            candidates.append(sub)
    flush()
    return _best(candidates)


def required_words(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Lowercase literals one of which occurs in every match of `pattern` (empty: no prefilter)."""
    tree = regex_tree.parse(pattern)
    try:
        found = _needs(tree) if tree is not None else None
    except TREE_ERRORS:  # a parse tree of another shape: no prefilter, same matches
        found = None
    return tuple(sorted(found)) if found else ()


_NEWLINE = ord("\n")
_LINE_CATEGORY_NAMES = (  # character classes without a newline in them
    "CATEGORY_WORD",
    "CATEGORY_DIGIT",
    "CATEGORY_NOT_LINEBREAK",
    "CATEGORY_UNI_WORD",
    "CATEGORY_UNI_DIGIT",
    "CATEGORY_UNI_NOT_LINEBREAK",
)
_LINE_CATEGORIES = frozenset(getattr(OPS, name, None) for name in _LINE_CATEGORY_NAMES) - {None}
_REPEATS = tuple(getattr(OPS, name, None) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"))


def _class_has_newline(items: Any) -> bool:
    for op, arg in items:
        if op is OPS.NEGATE:  # [^x]: a newline unless excluded; not worth proving
            return True
        if op is OPS.LITERAL and arg == _NEWLINE:
            return True
        if op is OPS.RANGE and arg[0] <= _NEWLINE <= arg[1]:
            return True
        if op is OPS.CATEGORY and arg not in _LINE_CATEGORIES:
            return True
    return False


def _on_line(items: Any, flags: int) -> bool:
    """No match of this (sub)pattern takes in a newline, nor is decided by what follows its line:
    no newline consumed or looked ahead at, no `$` (outside multiline mode) or `\\Z`. Lookbehinds
    may look anywhere: a search from `pos` sees the text before it."""
    for op, arg in items:
        if op is OPS.LITERAL:
            ok = arg != _NEWLINE
        elif op is OPS.NOT_LITERAL:
            ok = arg == _NEWLINE
        elif op is OPS.ANY:
            ok = not flags & re.DOTALL
        elif op is OPS.IN:
            ok = not _class_has_newline(arg)
        elif op is OPS.AT:
            ok = arg is not OPS.AT_END_STRING and (arg is not OPS.AT_END or bool(flags & re.MULTILINE))
        elif op is OPS.SUBPATTERN:
            ok = _on_line(arg[-1], (flags | arg[1]) & ~arg[2])
        elif op is OPS.BRANCH:
            ok = all(_on_line(branch, flags) for branch in arg[1])
        elif op in _REPEATS:
            ok = _on_line(arg[2], flags)
        elif op is OPS.ATOMIC_GROUP:
            ok = _on_line(arg, flags)
        elif op in (OPS.ASSERT, OPS.ASSERT_NOT):
            ok = arg[0] < 0 or _on_line(arg[1], flags)  # a lookbehind reads the real text before `pos`
        else:  # a group reference, a conditional: not simply known
            ok = False
        if not ok:
            return False
    return True


def stays_on_line(pattern: re.Pattern[str]) -> bool:
    """Every match lies within one line and is found by `pattern.search(text, line_start, line_end)`
    exactly as in the whole text (same span and groups); an empty match is never possible."""
    tree, width = regex_tree.parse(pattern), regex_tree.widths(pattern)
    if tree is None or width is None:
        return False  # not known: the whole text is scanned
    try:
        return width[0] > 0 and _on_line(tree, pattern.flags)
    except TREE_ERRORS:
        return False


@dataclass(frozen=True)
class Rule:
    """A named wording rule; `words` are derived from `pattern` (see `required_words`).

    `search` and `finditer` give exactly what the pattern's own methods give. On a text of
    `_PREFILTER_MIN_CHARS` or more they first find the words (one Aho-Corasick pass over the lowercased
    text): none, no match; otherwise, for a pattern that `stays_on_line`, only the lines holding a word
    are scanned (every match holds a word and no match crosses a line), and on a long line a pattern of
    bounded width (`reach`) is scanned from that width before the line's first word: no match starts
    earlier (a search from a position still reads the text before it for `\b` and lookbehinds)."""

    name: str
    pattern: re.Pattern[str]
    words: tuple[str, ...] = field(init=False)
    by_line: bool = field(init=False)
    reach: int | None = field(init=False)  # the longest match, when bounded
    _finder: LiteralFinder | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = required_words(self.pattern)
        ascii_words = all(w.isascii() for w in words)  # `folded` vouches for ASCII letters only
        object.__setattr__(self, "words", words if ascii_words else ())
        object.__setattr__(self, "by_line", bool(self.words) and stays_on_line(self.pattern))
        object.__setattr__(self, "_finder", LiteralFinder(self.words) if self.words else None)
        width = regex_tree.widths(self.pattern)
        object.__setattr__(self, "reach", width[1] if width is not None else None)

    def _lines(self, text: str) -> list[tuple[int, int]] | None:
        """(start, end) of each line holding a word, in order; None when the whole text must be scanned."""
        if self._finder is None or len(text) < _PREFILTER_MIN_CHARS:
            return None
        low = folded(text)
        if low is None:
            return None
        hits = self._finder.find(low)
        if not hits:
            return []
        if not self.by_line:
            return None
        spans: list[tuple[int, int]] = []
        end = -1
        for _, at, _ in hits:
            if at < end:
                continue  # on the line already listed
            start = low.rfind("\n", 0, at) + 1
            if self.reach is not None:
                start = max(start, at - self.reach)
            end = low.find("\n", at)
            if end < 0:
                end = len(low)
            spans.append((start, end))
        return spans

    def could_match(self, text: str) -> bool:
        return self._lines(text) != []

    def search(self, text: str) -> re.Match[str] | None:
        lines = self._lines(text)
        if lines is None:
            return self.pattern.search(text)
        for start, end in lines:
            match = self.pattern.search(text, start, end)
            if match:
                return match
        return None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        lines = self._lines(text)
        if lines is None:
            yield from self.pattern.finditer(text)
            return
        for start, end in lines:
            yield from self.pattern.finditer(text, start, end)


def rule(name: str, pattern: str) -> Rule:
    return Rule(name, re.compile(pattern))


class RuleSet:
    """Rules checked together on one (short) text: a single overlapping Aho-Corasick pass over the
    lowercased text finds every rule's words at once; only a rule with one of its words present, or
    with no words, runs its pattern."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._words = sorted({word for r in self.rules for word in r.words})
        index = {word: i for i, word in enumerate(self._words)}
        self._needs = [frozenset(index[word] for word in r.words) for r in self.rules]  # empty: always run
        self._finder = LiteralFinder(self._words, overlapping=True) if self._words else None

    def matching(self, text: str) -> list[Rule]:
        """The rules whose pattern occurs in `text` (as `pattern.search` finds it), in order."""
        low = folded(text) if len(text) >= _PREFILTER_MIN_CHARS else None
        if low is None:
            return [r for r in self.rules if r.pattern.search(text)]
        present = self._finder.present(low) if self._finder is not None else set()
        return [
            r
            for r, needs in zip(self.rules, self._needs, strict=True)
            if (not needs or not needs.isdisjoint(present)) and r.pattern.search(text)
        ]


class AnyOf:
    """A pattern written as alternatives, each with literals one of which every match of it holds.
    `search` tries only the alternatives whose literals occur in the text, joined in their order: the
    same first match as the whole alternation (an alternative without its literal matches nowhere)."""

    def __init__(self, *alternatives: tuple[str, tuple[str, ...]]) -> None:
        self.alternatives = alternatives
        self.pattern = re.compile("|".join(source for source, _ in alternatives))  # the rule as written
        self.triggers = tuple(dict.fromkeys(t for _, triggers in alternatives for t in triggers))
        # keyed by which triggers occur: each distinct trigger is looked for once per text
        self._joined: dict[tuple[bool, ...], re.Pattern[str] | None] = {}

    def _join(self, present: tuple[bool, ...]) -> re.Pattern[str] | None:
        found = {t for t, there in zip(self.triggers, present, strict=True) if there}
        sources = [source for source, triggers in self.alternatives if not found.isdisjoint(triggers)]
        return re.compile("|".join(sources)) if sources else None

    def search(self, text: str) -> re.Match[str] | None:
        present = tuple([trigger in text for trigger in self.triggers])
        try:
            joined = self._joined[present]
        except KeyError:
            joined = self._joined[present] = self._join(present)
        return joined.search(text) if joined is not None else None
