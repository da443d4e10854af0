"""Python 3.11.0+: the regex prefilters work without `re._parser.MAXWIDTH` (absent before 3.11.3), and
without CPython's private parser at all they fall back to the plain pattern with the same matches."""

from __future__ import annotations

import re

import pytest
from episodic.distill import heuristic, heuristic_text
from episodic.distill.wording_rules import Rule, required_words, stays_on_line
from episodic.plumbing import regex_tree

_TEXTS = (
    "It turns out the issue is the cache. Instead of retrying we fixed the root cause.\n" * 3,
    "plain words here and there\nstill failing because of the token\n" + "x" * 200,
    "",
)


def _found(rule: Rule, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in rule.finditer(text)]


class _Parser3112:
    """`re._parser` as Python 3.11.0–3.11.2 have it: no `MAXWIDTH`, an unbounded width is MAXREPEAT."""

    def __init__(self, real: object) -> None:
        self._real = real

    def __getattr__(self, name: str) -> object:
        if name == "MAXWIDTH":
            raise AttributeError("module 're._parser' has no attribute 'MAXWIDTH'")
        return getattr(self._real, name)

    def parse(self, source: str, flags: int) -> object:
        tree = self._real.parse(source, flags)  # type: ignore[attr-defined]
        low, high = tree.getwidth()
        tree.width = (low, min(high, 4294967295))  # getwidth() answers its cached width
        return tree


def test_rules_build_and_agree_without_maxwidth(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = pytest.importorskip("re._parser")
    monkeypatch.setattr(regex_tree, "_parser", _Parser3112(parser))
    bounded = Rule("bounded", re.compile(r"(?i)\bwhy (?:not|so)\b"))
    unbounded = Rule("unbounded", re.compile(r"(?i)still \w+"))
    assert bounded.reach == len("why not")
    assert unbounded.reach is None
    for rule in (bounded, unbounded, *heuristic.WORDING_RULES):
        rebuilt = Rule(rule.name, rule.pattern)
        for text in _TEXTS:
            assert _found(rebuilt, text) == [m.span() for m in rule.pattern.finditer(text)], rule.name


def test_without_the_private_parser_rules_scan_the_whole_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_tree, "_parser", None)
    pattern = re.compile(r"(?i)\bthe (?:issue|bug) is\b")
    assert regex_tree.parse(pattern) is None and regex_tree.widths(pattern) is None
    assert required_words(pattern) == () and not stays_on_line(pattern)
    rule = Rule("plain", pattern)
    assert (rule.words, rule.by_line, rule.reach) == ((), False, None)
    for text in _TEXTS:
        assert _found(rule, text) == [m.span() for m in pattern.finditer(text)]
    assert heuristic_text.with_first_chars(pattern) is pattern  # no lookahead derived: the same pattern


def test_a_tree_of_another_shape_means_no_prefilter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_tree, "parse", lambda pattern: [("unknown", None, None)])
    pattern = re.compile(r"(?i)\broot cause\b")
    assert required_words(pattern) == ()
    assert heuristic_text.with_first_chars(pattern) is pattern


def test_the_private_modules_are_touched_in_one_place_only() -> None:
    import pathlib

    package = pathlib.Path(regex_tree.__file__).parents[1]
    users = [
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if re.search(r"\bre\._(?:parser|constants)\b|\bsre_(?:parse|constants|compile)\b", p.read_text())
    ]
    assert users == ["plumbing/regex_tree.py"]
