"""Find every trigger literal in a text in one pass (Aho-Corasick), with a plain-Python fallback.

`ahocorasick_rs` (Rust aho-corasick, SIMD prefilter) scans for ~80 literals at once at ~250 MB/s;
CPython's own tools need one pass per literal (`str.find`, ~1.3 GB/s each, so ~30 MB/s for all) or
an alternation regex (~20 MB/s). The fallback keeps the scrubber correct where the wheel is missing
or the text cannot be encoded (lone surrogates): same triggers, only slower.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

_acrs: Any
try:  # optional accelerator; results are the same without it
    _acrs = importlib.import_module("ahocorasick_rs")
except ImportError:  # pragma: no cover - exercised by the fallback test through force_fallback
    _acrs = None


class LiteralFinder:
    """Positions of the given literals in a text, sorted by start: (literal index, start, end) triples."""

    def __init__(
        self, literals: Sequence[str], *, force_fallback: bool = False, overlapping: bool = False
    ) -> None:
        self.literals = tuple(literals)
        self.overlapping = overlapping  # `present` sees every literal, also one inside another's match
        self._automaton: Any = None
        if _acrs is not None and not force_fallback:
            # leftmost-first: where two literals start at one place the earlier-listed one wins;
            # standard matching where every occurrence is wanted (the only kind that can overlap)
            kind = _acrs.MatchKind.Standard if overlapping else _acrs.MatchKind.LeftmostFirst
            self._automaton = _acrs.AhoCorasick(
                self.literals, matchkind=kind, implementation=_acrs.Implementation.ContiguousNFA
            )

    @property
    def accelerated(self) -> bool:
        return self._automaton is not None

    def scanner(self) -> Callable[[str], list[tuple[int, int, int]]]:
        """`find` without its fallback: the automaton's own method when there is one (it raises where
        `find` would fall back; the caller catches and calls `find`)."""
        if self._automaton is not None:
            return self._automaton.find_matches_as_indexes  # type: ignore[no-any-return]
        return self._find_each

    def find(self, text: str) -> list[tuple[int, int, int]]:
        if self._automaton is not None:
            try:
                return self._automaton.find_matches_as_indexes(text)  # type: ignore[no-any-return]
            except (UnicodeError, ValueError, TypeError):
                pass  # e.g. lone surrogates cannot become UTF-8: search the slow way
        return self._find_each(text)

    def present(self, text: str) -> set[int]:
        """Indices of the literals that occur in `text` at all (needs `overlapping=True`: a leftmost
        scan would miss a literal seen only inside another's match)."""
        if self._automaton is not None:
            try:
                hits = self._automaton.find_matches_as_indexes(text, overlapping=True)
                return {hit[0] for hit in hits}
            except (UnicodeError, ValueError, TypeError):
                pass  # e.g. lone surrogates cannot become UTF-8: look the slow way
        return {index for index, literal in enumerate(self.literals) if literal in text}

    def _find_each(self, text: str) -> list[tuple[int, int, int]]:
        found: list[tuple[int, int, int]] = []
        for index, literal in enumerate(self.literals):
            if literal not in text:
                continue
            start = text.find(literal)
            while start >= 0:
                found.append((index, start, start + len(literal)))
                start = text.find(literal, start + len(literal))
        found.sort(key=lambda hit: (hit[1], hit[0]))
        return found
