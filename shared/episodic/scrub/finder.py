"""Find every trigger literal in a text in one pass (Aho-Corasick), with a plain-Python fallback.

`ahocorasick_rs` (Rust aho-corasick, SIMD prefilter) scans for many literals at once; CPython's own tools need
one pass per literal (`str.find`) or an alternation regex, several times slower (docs/security.md). The fallback
keeps the scrubber correct where the wheel is missing or the text cannot be encoded (lone surrogates): same
triggers, only slower.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any, AnyStr

_acrs: Any
try:  # optional accelerator; results are the same without it
    _acrs = importlib.import_module("ahocorasick_rs")
except ImportError:  # pragma: no cover - exercised by the fallback test through force_fallback
    _acrs = None


class LiteralFinder:
    """Positions of the given literals in a text, sorted by start: (literal index, start, end) triples.

    The automaton reads the text's UTF-8 (its str method would build a byte-to-character table as long
    as the text on every call); offsets are mapped back to characters only for a non-ASCII text."""

    def __init__(
        self, literals: Sequence[str], *, force_fallback: bool = False, overlapping: bool = False
    ) -> None:
        self.literals = tuple(literals)
        self.overlapping = overlapping  # `present` sees every literal, also one inside another's match
        self._utf8 = tuple(literal.encode() for literal in self.literals)
        self._lengths = tuple(len(literal) for literal in self.literals)
        self._automaton: Any = None
        if _acrs is not None and not force_fallback:
            # leftmost-first: where two literals start at one place the earlier-listed one wins;
            # standard matching where every occurrence is wanted (the only kind that can overlap)
            kind = _acrs.MatchKind.Standard if overlapping else _acrs.MatchKind.LeftmostFirst
            self._automaton = _acrs.BytesAhoCorasick(
                self._utf8, matchkind=kind, implementation=_acrs.Implementation.ContiguousNFA
            )

    @property
    def accelerated(self) -> bool:
        return self._automaton is not None

    def utf8_scanner(self) -> Callable[[bytes], list[tuple[int, int, int]]]:
        """`find` over a text's UTF-8 bytes, offsets in bytes (`char_offsets` maps them to the text's):
        the caller encodes once for several finders and calls the automaton with no frame between."""
        if self._automaton is None:
            return functools.partial(find_each, literals=self._utf8, overlapping=self.overlapping)
        if self.overlapping:
            return functools.partial(self._automaton.find_matches_as_indexes, overlapping=True)
        return self._automaton.find_matches_as_indexes  # type: ignore[no-any-return]

    def char_offsets(self, data: bytes, hits: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Hits of `utf8_scanner` in `data` (a text's UTF-8) as offsets into the text's characters.

        A hit starts on a character boundary (UTF-8 never matches mid-character) and its bytes decode
        to its literal, so it spans the literal's length in characters."""
        lengths = self._lengths
        found: list[tuple[int, int, int]] = []
        byte_at = char_at = 0
        for index, start, _end in hits:
            if start < byte_at:  # hits come sorted by start; recount from the text's start if not
                byte_at = char_at = 0
            char_at += len(data[byte_at:start].decode())
            byte_at = start
            found.append((index, char_at, char_at + lengths[index]))
        return found

    def find(self, text: str) -> list[tuple[int, int, int]]:
        if self._automaton is None:
            return find_each(text, self.literals, self.overlapping)
        try:
            data = text.encode()
        except UnicodeError:  # e.g. lone surrogates cannot become UTF-8: search the slow way
            return find_each(text, self.literals, self.overlapping)
        hits: list[tuple[int, int, int]] = self._automaton.find_matches_as_indexes(
            data, overlapping=self.overlapping
        )
        return self.char_offsets(data, hits) if hits and len(data) != len(text) else hits

    def present(self, text: str) -> set[int]:
        """Indices of the literals that occur in `text` at all (needs `overlapping=True`: a leftmost
        scan would miss a literal seen only inside another's match)."""
        if self._automaton is not None:
            try:
                hits = self._automaton.find_matches_as_indexes(text.encode(), overlapping=True)
                return {hit[0] for hit in hits}
            except UnicodeError:
                pass  # e.g. lone surrogates cannot become UTF-8: look the slow way
        return {index for index, literal in enumerate(self.literals) if literal in text}


def find_each(
    text: AnyStr, literals: Sequence[AnyStr], overlapping: bool = False
) -> list[tuple[int, int, int]]:
    """The automaton's hits the slow way, one `find` per literal, sorted by start: every occurrence when
    `overlapping`, else leftmost-first as the automaton gives them (at one start the earlier-listed literal,
    then nothing that starts inside it: `sk-` inside `sk-ant-` is no second trigger)."""
    found: list[tuple[int, int, int]] = []
    for index, literal in enumerate(literals):
        if literal not in text:
            continue
        start = text.find(literal)
        while start >= 0:
            found.append((index, start, start + len(literal)))
            start = text.find(literal, start + len(literal))
    found.sort(key=lambda hit: (hit[1], hit[0]))
    if overlapping:
        return found
    kept: list[tuple[int, int, int]] = []
    end = 0
    for hit in found:
        if hit[1] >= end:
            kept.append(hit)
            end = hit[2]
    return kept
