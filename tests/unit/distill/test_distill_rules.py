"""A rule's word-gated, line-windowed search finds exactly what the plain pattern finds."""

from __future__ import annotations

import re
import sys

import pytest
from episodic.distill import heuristic, heuristic_problem
from episodic.distill.checks import CHATTER_RULES
from episodic.distill.wording_rules import _CASE_TWINS, Rule, RuleSet, folded, stays_on_line
from episodic.scrub.finder import LiteralFinder
from hypothesis import given, settings
from hypothesis import strategies as st

_ADVERSARIAL = (  # lookbehinds, multiline anchors, unbounded runs, a group: the edges of the window rule
    Rule("behind", re.compile(r"(?<=\n)still\b|(?<![\w.])fail\w*")),
    Rule("anchored", re.compile(r"(?im)^\s*root cause|cause$|^why\b")),
    Rule("ahead", re.compile(r"(?i)\bdue to(?= \w)|instead(?!\s*of)")),
    Rule("groups", re.compile(r"(?i)\b(?:the (issue|bug)|turn(ed|s) out)\b")),
    Rule("end", re.compile(r"(?i)because\W*\Z|hmm+")),
    # bounded width: scanned from `reach` before a long line's first word; lookbehinds still see before it
    Rule("bounded", re.compile(r"(?i)(?<=\bthe )(?:issue|bug)\b|(?<![\w-])cause\b|\bwhy (?:not|so)\b")),
)
_RULES = (
    *heuristic.WORDING_RULES,
    heuristic_problem.DIAGNOSIS,
    *CHATTER_RULES,
    *_ADVERSARIAL,
)
_WORDS = st.sampled_from(
    ["instead of", "Rather than", "root cause", "Because", "I suspect", "didn't work", "still failing",
     "the issue is", "turns out", "TURNED OUT", "the fix was", "probably", "due to it", "hmmm", "why",
     "ſtill", "K", "İssue", "ı", "é", "→", "\n", "\n\n", " ", ".", "x", "_", "foo.", "sure!", "let me", "?",
     "lines 12", "can you", "here's", "todo", ":", "…", "|", "—"]
)  # fmt: skip
_TEXTS = st.lists(st.one_of(_WORDS, st.text(max_size=6)), min_size=5, max_size=60).map("".join)


def _spans(matches: object) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in matches]  # type: ignore[attr-defined]


@settings(max_examples=500, deadline=None)
@given(_TEXTS)
def test_gated_search_agrees_with_the_plain_pattern(text: str) -> None:
    for rule in _RULES:
        found, expected = rule.search(text), rule.pattern.search(text)
        assert _spans([found] if found else []) == _spans([expected] if expected else []), (rule.name, text)
        assert _spans(rule.finditer(text)) == _spans(rule.pattern.finditer(text)), (rule.name, text)


@pytest.mark.parametrize("rule", _RULES, ids=lambda r: r.name)
def test_words_at_line_edges_and_inside_longer_words(rule: Rule) -> None:
    pad = "plain words here and there " * 3
    for word in (*rule.words, "ſtill", "İssue"):
        for text in (
            word + pad,
            pad + word,
            pad + "\n" + word + "\n" + pad,
            pad + "x" + word + "y\n" + word.upper(),
            pad + word[:-1] + "\n" + word[-1:] + " " + word,
            "é " + pad + word.title() + " →",
        ):
            found, expected = rule.search(text), rule.pattern.search(text)
            assert (found and found.span()) == (expected and expected.span()), (rule.name, text)
            assert _spans(rule.finditer(text)) == _spans(rule.pattern.finditer(text)), (rule.name, text)


def test_reach_is_the_longest_match_when_bounded() -> None:
    assert Rule("r", re.compile(r"(?i)\b(?:due to|instead of)\b")).reach == len("instead of")
    assert Rule("r", re.compile(r"(?i)\bstill fail\w*")).reach is None


def test_line_windows_only_where_no_match_can_cross_a_line() -> None:
    assert stays_on_line(re.compile(r"(?i)\bdue to\b|(?<=\s)x"))
    assert stays_on_line(re.compile(r"(?m)cause$"))
    assert not stays_on_line(re.compile(r"cause$"))  # "$" also matches before a final newline
    assert not stays_on_line(re.compile(r"cause\s+why"))
    assert not stays_on_line(re.compile(r"cause(?!\s)"))  # looks ahead at the newline
    assert not stays_on_line(re.compile(r"(?s)cause.why"))
    assert not stays_on_line(re.compile(r"[^x]cause"))
    assert not stays_on_line(re.compile(r"x*"))  # an empty match


def test_case_twins_are_every_letter_lowercase_hides() -> None:
    letter = re.compile(r"(?i)[a-z]")
    hidden = {
        chr(c)
        for c in range(0x80, sys.maxunicode + 1)
        if letter.match(chr(c)) and not (len(chr(c).lower()) == 1 and chr(c).lower().isascii())
    }
    assert hidden <= set(_CASE_TWINS)
    assert folded("a ſtill b") is None
    assert folded("Über") == "über"


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_a_rule_set_picks_exactly_the_rules_whose_pattern_occurs(text: str) -> None:
    rules = RuleSet(_RULES)
    assert rules.matching(text) == [r for r in _RULES if r.pattern.search(text)]


def test_literals_present_overlapping_with_and_without_the_automaton() -> None:
    words = ["the issue", "issue", "sue", "cause"]
    for finder in (
        LiteralFinder(words, overlapping=True),
        LiteralFinder(words, overlapping=True, force_fallback=True),
    ):
        assert finder.present("so the issue was") == {0, 1, 2}  # "sue" only inside the other two
        assert finder.present("because \ud800") == {3}  # a lone surrogate: the slow way
        assert finder.present("nothing here") == set()
