"""Statements, not chatter: the chatter rules both ways, the rewrite, and the derived prefilter words."""

from __future__ import annotations

import re

import pytest
from episodic.distill import heuristic, heuristic_problem
from episodic.distill.checks import CHATTER_RULES, chatter_breaks, chatter_violations, judge_outcome
from episodic.distill.heuristic_statements import as_statement
from episodic.distill.wording_rules import Rule, folded, required_words
from episodic.kernel.models import Card, Outcome
from hypothesis import given, settings
from hypothesis import strategies as st
from kits.distill_builders import bash, edit, prompt, say, tool, trajectory

# sentences the v2 heuristic put into cards of ../shared/transcripts
CHATTER = [
    "Perfect! All critical blocking issues fixed.",
    "Same version, so that wasn't it.",
    "I also need to unset XDG_CONFIG_HOME to avoid picking up the real config.",
    "Let me verify the current code is correct.",
    "All tests pass and lint is clean. The READMEs are now much simpler branch Ready to commit?",
    "Done. Fixed both issues in Writer parameter",
    "I'll update the test script to remove the session calls since those commands were removed.",
    "If it still fails, we can check the logs for debug messages.",
    "Here's what changed:",
    "Now let me run the tests.",
    "Instead of lines",
    "Would you like me to commit these changes?",
    "Running the full suite to make sure nothing else broke",
    "The fix replaces the lookup and then…",
    "| Location | Created In | Purpose |",
    "Based on the commits since the last tag, here's the changelog update.",
]
# statements as a card states them (the style of an LLM-written card)
STATEMENTS = [
    "Keep the flag-driven path non-interactive and only prompt in the interactive path",
    "The root cause was a stale lock file left behind by a crashed session.",
    "Next.js builds fail when the environment variable is missing at build time",
    "A date prefix with an empty remainder looked like it should parse to an empty ID",
    "Reuse the existing author-resolution helper rather than writing new logic",
    "CI lints the merge commit with main, so errors from main show up on the branch.",
]


@pytest.mark.parametrize("text", CHATTER)
def test_chatter_is_named(text: str) -> None:
    assert chatter_breaks(text), text


@pytest.mark.parametrize("text", STATEMENTS)
def test_statements_pass(text: str) -> None:
    assert chatter_breaks(text) == ()


@pytest.mark.parametrize(
    ("sentence", "statement"),
    [
        ("Perfect! The cache key ignores the tenant, so every tenant reads the same entry.",
         "The cache key ignores the tenant, so every tenant reads the same entry."),
        ("Actually, I think the config loader runs before the flags are parsed.",
         "The config loader runs before the flags are parsed."),
        ("So the real issue is that the retry queue never resets its counter:",
         "The real issue is that the retry queue never resets its counter"),
        ("Let me check the logs.", ""),
        ("Should I also update the docs?", ""),
        ("Same version, so that wasn't it.", ""),
    ],
)  # fmt: skip
def test_sentences_become_statements_or_nothing(sentence: str, statement: str) -> None:
    assert as_statement(sentence) == statement


def test_a_stated_intent_becomes_the_decision() -> None:
    decision = as_statement("I'll rebase the branch instead of merging main.", intent=True)
    assert decision == "Rebase the branch instead of merging main."
    assert as_statement("I'll rebase the branch instead of merging main.") == ""


def test_chatter_violations_name_the_field() -> None:
    card = Card(
        problem="Login fails",
        insight="Perfect! It works now.",
        dead_ends=["Let me retry it later"],
        outcome=Outcome.UNVERIFIED,
    )
    found = chatter_violations(card)
    assert any(v.startswith("insight: chatter: interjection") for v in found)
    assert any(v.startswith("dead_ends[0]: chatter:") for v in found)
    assert (
        chatter_violations(Card(problem="Login fails", insight=STATEMENTS[1], outcome=Outcome.UNVERIFIED))
        == []
    )


def test_required_words_come_from_the_pattern() -> None:
    assert required_words(re.compile(r"(?i)\b(?:didn'?t work|no luck)\b")) == ("no luck", "t work")
    assert required_words(re.compile(r"(?i)\bthe (?:issue|bug) was\b")) == (" was",)
    assert required_words(re.compile(r"\w+\?$")) == ()  # nothing literal of two letters: no prefilter
    assert Rule("x", re.compile(r"(?i)still")).search("ſtill") is not None  # non-ASCII skips the prefilter


_WORDS = st.sampled_from(
    ["instead of", "Rather than", "root cause", "because", "I suspect", "didn't work", "that didnt", "hmm",
     "Perfect!", "Let me", "I'll", "would you like", "running", "that wasn't it", "?", ":", "…", "Next.js",
     "the issue is", "turns out", "the fix was", "probably", "ſtill", "\u212a", " ", ".", "\n", "ok,", "so"]
)  # fmt: skip
_TEXTS = st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=25).map("".join)
_WORDED = [
    *(
        (r.pattern, r.words)
        for r in (
            *heuristic.WORDING_RULES,
            heuristic_problem.DIAGNOSIS,
            *CHATTER_RULES,
        )
    ),
]


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_prefilter_words_never_hide_a_match(text: str) -> None:
    low = folded(text)  # None: the text is scanned whole, its words unread
    for pattern, words in _WORDED:
        if pattern.search(text) and words and low is not None:
            assert any(word in low for word in words), (pattern.pattern[:60], text)


def test_user_saying_it_still_misbehaves_after_the_last_pass_is_failed() -> None:
    traj = trajectory(
        prompt("the cli prints the usage text on every run"),
        edit(),
        bash("go test ./...", "ok  pkg 0.1s"),
        prompt("it still prints the usage text"),
    )
    assert judge_outcome(traj) is Outcome.FAILED
    still_good = trajectory(
        prompt("fix"), edit(), bash("go test ./...", "ok"), prompt("great, it still works")
    )
    assert judge_outcome(still_good) is Outcome.VERIFIED


def _debug_edit(old: str, new: str) -> object:
    return tool("Edit", "/home/dev/proj/app/handler.go", old_string=old, new_string=new)


def test_debug_only_edits_after_a_failing_test_then_lint_is_failed() -> None:
    traj = trajectory(
        prompt("the handler test fails"),
        edit(),
        bash("go test ./...", "--- FAIL: TestHandler", exit_code=1),
        _debug_edit("return x", 'fmt.Println("x =", x)\nreturn x'),  # type: ignore[arg-type]
        bash("golangci-lint run", "0 issues."),
    )
    assert judge_outcome(traj) is Outcome.FAILED
    fixed = trajectory(
        prompt("the handler test fails"),
        edit(),
        bash("go test ./...", "--- FAIL: TestHandler", exit_code=1),
        _debug_edit("return x", "return x + 1"),  # type: ignore[arg-type]
        bash("golangci-lint run", "0 issues."),
    )
    assert judge_outcome(fixed) is Outcome.VERIFIED  # a real change, checked by lint: the usual rule


def test_a_declined_change_for_the_last_request_leaves_it_unverified() -> None:
    traj = trajectory(
        prompt("add the agent to the logs"),
        edit(),
        bash("go test ./...", "ok"),
        prompt("now use it in the hook dispatcher"),
        say("Adding it there."),
        edit(rejected=True),
    )
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_ci_configuration_checked_only_locally_is_unverified() -> None:
    traj = trajectory(
        prompt("use the mise tasks in the lint workflow"),
        edit("/home/dev/proj/.github/workflows/lint.yml"),
        bash("mise run lint", "0 issues."),
    )
    assert judge_outcome(traj) is Outcome.UNVERIFIED
