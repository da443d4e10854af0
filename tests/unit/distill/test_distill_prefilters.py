"""The distiller's speed-ups (first-character lookaheads, literal prefilters) never change a match."""

from __future__ import annotations

import re

from episodic.distill import (
    checks,
    evidence,
    heuristic,
    heuristic_problem,
    heuristic_statements,
    heuristic_steps,
    heuristic_text,
)
from episodic.distill.heuristic_text import depath, squash, strip_md_prefixes, unmark, with_first_chars
from episodic.distill.holes import GAP
from hypothesis import given, settings
from hypothesis import strategies as st

_WORDS = st.sampled_from(
    [
        "instead of", "Rather than", "the root cause is", "because", "I suspect", "didn't work", "FAIL",
        "3 failed", "Error: ", "npm ERR!", "panic: ", "✗", "let me", "might be", "\n", " ", ".", "`x`",
        "**b**", "[a](http://x.y)", "www.x.org", "/a/b/c.py", "C:\\x\\y", "foo.go:12", "[REDACTED:secret]",
        "deadbeef1", "<tag>", "</system-reminder>", "```", "Kelvin \u212a", "\u017ftill", "ok",
        "FAILED", "--- FAIL", " 12 errors", "a1 failing", "error[E0308]: ", "ERROR: ", "error TS2345",
        "** (KeyError)", "build failed", "Compilation failed", "Process completed with exit code 2", "\u0663",
    ]
)  # fmt: skip
_TEXTS = st.lists(st.one_of(_WORDS, st.text(max_size=8)), max_size=30).map("".join)


def test_first_char_lookahead_is_added_where_it_is_known() -> None:
    wrapped = with_first_chars(re.compile(r"(?i)\b(?:alpha|beta gamma)\b"))
    assert wrapped.pattern == r"(?i)(?=[ab])\b(?:alpha|beta gamma)\b"
    optional = re.compile(r"\b(?:x)?y")  # an optional start: no lookahead is derived
    assert with_first_chars(optional) is optional


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_lookahead_patterns_match_exactly_like_the_originals(text: str) -> None:
    for pattern in (
        heuristic._DECISION_RE,
        heuristic._CAUSE_RE,
        heuristic._FOUND_RE,
        heuristic._FAILED_TRY_RE,
        heuristic._HYPOTHESIS_RE,
        heuristic_problem._DIAGNOSIS_RE,
        heuristic_problem._SYMPTOM_WORDS_RE,
        heuristic_problem.TENTATIVE_RE,
        heuristic_steps._ERROR_LINE_RE,
    ):
        original = re.compile(re.sub(r"^(\(\?[a-z]+\))\(\?=\[[^\]]+\]\)", r"\1", pattern.pattern))
        assert original.pattern != pattern.pattern
        found, expected = pattern.search(text), original.search(text)
        assert (found and found.span()) == (expected and expected.span())


_OUTPUT_FAIL_ORIGINAL = re.compile(  # the rule as one alternation; `output_shows_failure` checks it by parts
    r"--- FAIL|^FAIL\b|\bFAILED\b|\b[1-9]\d* (?:failed|failing|failures?|errors?)\b|Traceback \(most recent"
    r"|^panic: |npm ERR!|^\s*(?:error(?:\[E\d+\])?|Error|ERROR): |error TS\d+|✗|✖|\*\* \(\w+Error\)"
    r"|[Bb]uild failed|[Cc]ompilation failed|Process completed with exit code [1-9]",
    re.M,
)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_output_failure_prefilter_agrees_with_the_pattern(text: str) -> None:
    evidence.output_shows_failure.cache_clear()
    assert evidence.output_shows_failure(text) is bool(_OUTPUT_FAIL_ORIGINAL.search(text))


def test_guarded_substitutions_still_clean() -> None:
    assert (
        unmark("see [the docs](https://x.io/a) and **bold** `npm test` ✅")
        == "see the docs and bold npm test "
    )
    assert (
        depath("edit /home/u/src/app.py and lib/util.go at foo.go:12") == "edit app.py and util.go at foo.go"
    )


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_one_pass_sentence_scan_finds_what_a_scan_per_sentence_finds(text: str) -> None:
    for rule in (
        heuristic._DECISION,
        heuristic._FAILED_TRY,
        heuristic._HYPOTHESIS,
        heuristic._CAUSE,
        heuristic._FOUND,
        heuristic_problem.DIAGNOSIS,
    ):
        expected = [
            s
            for s in heuristic.sentences(text)
            if 1 <= len(s) <= 400 and not s.endswith("?") and rule.pattern.search(s)
        ]
        assert list(heuristic.matching_sentences((text,), rule, 1, 400)) == expected


_SPLIT_ORIGINAL = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`])|\n+")
_EMPTY_PUNCT_ORIGINAL = re.compile(r"\(\s*\)|\[\s*\]|\s+([,.;:!?])(?!\w)|([,;:])(?=\s*[,;:.])")
_LINE_PIECES = st.sampled_from(
    ["# ", "  - ", "> ", "1. ", "* [x] ", " ,", ";", " :", "( )", "[]", "—", "\t", "0xBEEF", "deadbeefcafe",
     "abcdefa\u0663", "abc1234", "  ", "\x0c", "\r\n", "\u00a0"]
)  # fmt: skip
_LINE_TEXTS = st.lists(st.one_of(_LINE_PIECES, _WORDS), max_size=20).map("".join)


@settings(max_examples=400, deadline=None)
@given(_LINE_TEXTS)
def test_rewritten_scans_give_the_original_substitutions(text: str) -> None:
    assert strip_md_prefixes(text) == heuristic_text._MD_PREFIX_RE.sub("", text)
    assert heuristic_text._SENTENCE_SPLIT_RE.split(text) == _SPLIT_ORIGINAL.split(text)
    punct = lambda m: m.group(1) or m.group(2) or ""  # noqa: E731
    assert heuristic_text._EMPTY_PUNCT_RE.sub(punct, text) == _EMPTY_PUNCT_ORIGINAL.sub(punct, text)
    assert bool(heuristic_text._HEX_RE.search(text)) <= bool(heuristic_text._DIGIT_RE.search(text))
    hex_only = re.sub(r"[-:/\\\[]", "", text)  # no path, location, id or marker: only the hex step can act
    assert depath(hex_only) == heuristic_text._HEX_RE.sub(GAP, hex_only)
    spaced = heuristic_text._SPACE_RE.sub(" ", text.replace("\n", " "))
    assert squash(text) == heuristic_text._EMPTY_PUNCT_RE.sub(punct, spaced).strip(" -–—:;,")
    for line in (text, "Author: " + text, " date :" + text, text + " a.b@c.io"):
        assert heuristic_problem.pasted(line) is bool(heuristic_problem._PASTED_RE.search(line))
    for shell in (text, "FOO=1 sudo uv run " + text, "timeout 5 env " + text):
        assert heuristic_steps.unwrap(shell) == heuristic_steps._WRAPPER_RE.sub("", shell)
    for tail in ("", " :", " —\n", ";,", " - \n "):
        line = text + tail
        assert strip_speaker_tail(line) == heuristic_statements._TRAILING_RE.sub("", line)


def strip_speaker_tail(text: str) -> str:
    if text.rstrip()[-1:] in heuristic_statements._TRAILING_CHARS:  # the gate `strip_speaker` uses
        text = heuristic_statements._TRAILING_RE.sub("", text)
    return text


_CODE_PIECES = st.sampled_from(
    ["a.b.c(", "obj.get(x, 'y')", ").then(", "x := 1", "const x = 2", "=> {", "a::b::c", "at fn (",
     "app.js:10:5)", "Traceback (most recent call last)", 'File "x.py", line 3', "goroutine 1 [",
     "panicked at", "panic: 0xdeadbeef", "  at A.b(C.java:4)", "[signal SIGSEGV", "(", ")", "=", ":"]
)  # fmt: skip
_CODE_TEXTS = st.lists(st.one_of(_CODE_PIECES, _WORDS), max_size=12).map("".join)
_PATTERN_ORIGINALS = {
    "code expression": r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\(|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\([^)\n]*[,'\"=][^)\n]*\)"
    r"|\)\.[A-Za-z_]\w*\(|\b\w+\s*:=\s*\S|\b(?:const|let|var)\s+\w+\s*=\s*\S|=>\s*\{|\b\w+(?:::\w+){2,}",
    "stack trace": r"Traceback \(most recent call last\)|File \"[^\"\n]+\", line \d+|goroutine \d+ \["
    r"|\bat\s+[\w.$<>\[\]]+\s*\([^()\n]*:\d+(?::\d+)?\)|panicked at|\bpanic:[^\n]*0x[0-9a-fA-F]{4,}"
    r"|^\s+at\s+[\w.$]+\([\w$]+\.java:\d+\)|\[signal SIG\w+",
}


@settings(max_examples=400, deadline=None)
@given(_CODE_TEXTS)
def test_alternatives_gated_one_by_one_find_the_first_match_of_the_whole(text: str) -> None:
    for kind, any_of in (("code expression", checks._CODE_EXPRESSION), ("stack trace", checks._STACK_TRACE)):
        assert any_of.pattern.pattern == _PATTERN_ORIGINALS[kind]
        for source, triggers in any_of.alternatives:  # a trigger is in every match of its alternative
            for match in re.finditer(source, text):
                assert any(t in match.group(0) for t in triggers), (source, text)
        found, expected = any_of.search(text), any_of.pattern.search(text)
        assert (found and found.span()) == (expected and expected.span()), (kind, text)
