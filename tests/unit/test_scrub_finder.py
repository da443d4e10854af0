"""The scrubber's trigger scan over UTF-8 bytes finds exactly what the automata's str method found."""

from __future__ import annotations

import copy

import ahocorasick_rs
from episodic.scrub import Scrubber, default_scrubber
from episodic.scrub.finder import LiteralFinder
from hypothesis import example, given, settings
from hypothesis import strategies as st

_SCRUBBER = default_scrubber()
_FINDERS = (_SCRUBBER._t.finder, *(finder for finder, _, _ in _SCRUBBER._t.companions))
_LITERALS = sorted({literal for finder in _FINDERS for literal in finder.literals})
# multi-byte characters (2, 3 and 4 bytes of UTF-8), the cut marker's ellipsis and a lone surrogate
_ODD = ["é", "中", "😀", "…", "\ud800", "\x00", " ", "=", '"', "a1B2c3D4e5F6g7H8"]
_TEXTS = st.lists(
    st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_ODD), st.text(max_size=8)), max_size=30
).map("".join)


class _StrFinder:
    """The reference: the same automaton over the text as str (offsets in characters from the wheel)."""

    def __init__(self, literals: tuple[str, ...]) -> None:
        self._slow = LiteralFinder(literals, force_fallback=True)  # lone surrogates: plain str.find
        self._automaton = ahocorasick_rs.AhoCorasick(
            literals,
            matchkind=ahocorasick_rs.MatchKind.LeftmostFirst,
            implementation=ahocorasick_rs.Implementation.ContiguousNFA,
        )

    def find(self, text: str) -> list[tuple[int, int, int]]:
        try:
            return self._automaton.find_matches_as_indexes(text)  # type: ignore[no-any-return]
        except UnicodeError:
            return self._slow.find(text)


def _utf8_hits(finder: LiteralFinder, text: str) -> list[tuple[int, int, int]]:
    data = text.encode()
    hits = finder.utf8_scanner()(data)
    return finder.char_offsets(data, hits) if len(data) != len(text) else hits


@settings(max_examples=500, deadline=None)
@given(_TEXTS)
def test_utf8_hits_are_the_str_hits(text: str) -> None:
    if any("\ud800" <= c <= "\udfff" for c in text):
        return  # no UTF-8 for a lone surrogate: the scrubber takes `find` (next test)
    for finder in (*_FINDERS, LiteralFinder(_FINDERS[0].literals, force_fallback=True)):
        assert _utf8_hits(finder, text) == finder.find(text)
    for finder in _FINDERS:
        assert finder.find(text) == _StrFinder(finder.literals).find(text)


def _str_scan(data: bytes) -> list[tuple[int, int, int]]:
    raise UnicodeError  # sends every text down the path the str automata took


@settings(max_examples=500, deadline=None)
@given(_TEXTS)
@example(
    "sk-ant--key"
)  # the fallback once saw `sk-` inside `sk-ant-` as a second trigger (a dangling OpenAI key)
def test_scrubber_spans_are_the_str_spans(text: str) -> None:
    reference = Scrubber()
    triggers = copy.copy(reference._t)  # its own: the built-in automata are shared by every scrubber
    triggers.scan = _str_scan  # type: ignore[assignment]
    triggers.finder = _StrFinder(triggers.finder.literals)  # type: ignore[assignment]
    triggers.companions = [  # type: ignore[misc]
        (_StrFinder(finder.literals), _str_scan, offset) for finder, _, offset in triggers.companions
    ]
    reference._built = triggers
    assert _SCRUBBER._spans(text) == reference._spans(text)
    assert _SCRUBBER.scrub_counted(text) == reference.scrub_counted(text)
    slow = Scrubber(accelerated=False)
    assert slow.scrub_counted(text) == reference.scrub_counted(text)


def test_char_offsets_of_multibyte_text() -> None:
    finder = LiteralFinder(["key", "ü"])
    text = "é😀 key …ü key"
    data = text.encode()
    found = finder.char_offsets(data, finder.utf8_scanner()(data))
    assert [text[start:end] for _, start, end in found] == ["key", "ü", "key"]
    assert found == finder.find(text)
    assert finder.char_offsets(data, list(reversed(finder.utf8_scanner()(data)))) == found[::-1]
