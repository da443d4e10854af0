"""The scrubber's trigger search (issue 52: one search for every literal) gives the same hits with every engine:
Hyperscan where installed, ahocorasick_rs automata, plain `str.find`; and the UTF-8 scan finds what a str scan finds."""

from __future__ import annotations

import ahocorasick_rs
import pytest
from episodic.scrub import Scrubber, default_scrubber
from episodic.scrub.engine import Group, TriggerSearch, hyperscan_available
from episodic.scrub.finder import LiteralFinder
from hypothesis import example, given, settings
from hypothesis import strategies as st

_SCRUBBER = default_scrubber()
_SEARCH = _SCRUBBER._t.search
_ENGINES = ["ahocorasick", "python"] + (["hyperscan"] if hyperscan_available() else [])
_SCRUBBERS = {engine: Scrubber(engine=engine) for engine in _ENGINES}
# every literal, in its cases (the catalogue's match in any case) and with text a context needs after it
_LITERALS = sorted(
    {v for lit in _SEARCH.literals for v in (lit, lit.upper(), lit.title(), lit + "a1B2c3D4e5F6g7H8" * 3)}
)
# multi-byte characters (2, 3 and 4 bytes of UTF-8), the cut marker's ellipsis and a lone surrogate
_ODD = ["é", "中", "😀", "…", "\ud800", "\x00", " ", "=", '"', "a1B2c3D4e5F6g7H8", "_"]
_TEXTS = st.lists(
    st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_ODD), st.text(max_size=8)), max_size=30
).map("".join)


def test_the_engines_in_this_environment() -> None:
    assert {s.engine for s in _SCRUBBERS.values()} == set(_ENGINES)
    assert _SCRUBBER.engine == ("hyperscan" if hyperscan_available() else "ahocorasick")


def _hits(search: TriggerSearch, text: str) -> list[tuple[int, int, int]]:
    """The hits over the text's ASCII form (what the scrubber passes), the same as over its UTF-8 or itself."""
    found = search.find(text, text.encode("ascii", "replace"))
    try:
        data: bytes | None = text.encode()
    except UnicodeError:
        data = None
    assert search.find(text, data) == found
    return found


@settings(max_examples=500, deadline=None)
@given(_TEXTS)
@example(
    "sk-ant--key"
)  # the fallback once saw `sk-` inside `sk-ant-` as a second trigger (a dangling OpenAI key)
@example("GITHUB_API_KEY=" + "a1b2" * 10)  # a trigger with a context (noseyparker.TRIGGER_CONTEXT)
def test_every_engine_gives_the_same_hits_and_the_same_scrub(text: str) -> None:
    hits = {engine: _hits(s._t.search, text) for engine, s in _SCRUBBERS.items()}
    assert all(found == hits["python"] for found in hits.values()), hits
    scrubbed = {engine: s.scrub_counted(text) for engine, s in _SCRUBBERS.items()}
    assert all(found == scrubbed["python"] for found in scrubbed.values()), scrubbed


def test_leftmost_first_per_group() -> None:
    """At one start the earlier-listed literal wins, nothing starts inside a kept hit of its own group, and
    another group's literals are searched on their own (ahocorasick_rs LeftmostFirst per group)."""
    groups = [Group(("sk-ant-", "sk-", "ant")), Group(("-an", "nt-"))]
    for engine in _ENGINES:
        search = TriggerSearch(groups, 0, engine)
        text = "x sk-ant-y"
        hits = search.find(text, text.encode())
        assert [search.literals[i] for i, _, _ in hits] == ["sk-ant-", "-an"], engine
        reference = ahocorasick_rs.AhoCorasick(
            groups[0].literals, matchkind=ahocorasick_rs.MatchKind.LeftmostFirst
        )
        assert [(i, s, e) for i, s, e in hits if i < 3] == reference.find_matches_as_indexes(text)


@pytest.mark.parametrize("engine", _ENGINES)
def test_any_case_group_and_multibyte_offsets(engine: str) -> None:
    search = TriggerSearch(
        [Group(("key",)), Group(("github",), any_case=True, contexts={"github": "_api"})], 0, engine
    )
    text = "é😀 key …GitHub_API GITHUB only"
    found = search.find(text, text.encode())
    assert [text[start:end] for _, start, end in found] == ["key", "GitHub"]


def test_char_offsets_of_multibyte_text() -> None:
    finder = LiteralFinder(["key", "ü"])
    text = "é😀 key …ü key"
    data = text.encode()
    found = finder.char_offsets(data, finder.utf8_scanner()(data))
    assert [text[start:end] for _, start, end in found] == ["key", "ü", "key"]
    assert found == finder.find(text)
    assert finder.char_offsets(data, list(reversed(finder.utf8_scanner()(data)))) == found[::-1]
