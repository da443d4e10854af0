"""Holes left where an identifier, path or code span was removed (distill/holes.py): real examples both ways.

The broken ones come from heuristic cards and dream records of the shared transcripts before `heuristic:v4`
(issue 29's and 34's examples among them); the sound ones are statements of the same cards that must pass.
"""

from __future__ import annotations

import pytest
from episodic.distill.checks import hole_violations
from episodic.distill.evidence import check_segment, is_formatter
from episodic.distill.holes import hole_breaks, without_holes
from episodic.kernel.models import Card, Outcome

BROKEN = [
    "The lint error in is a pre-existing bug (it prints err instead of initErr).",
    "The crash happens in parse (line ) when the file is empty.",
    "Fails with exit status) after the build.",
    "The issue was that the handler was using an undefined message variable with.",
    'Instead of "Another sessions..." Print something like.',
    "In at line 84, when a single line exceeds the limit, the line is added without validation.",
    'There are registry name constants = "gemini") in.',
    "The fix moved the check into the.",
    "Renamed () to make the intent clear.",
    # issue 39: versions and an identifier removed as if they were code names
    "Updated Go version from to in both files.",
    "The change at now calls the helper to resolve the author.",
    "Added the Stripe publishable key to for your gitleaks testing.",
    "The CLIVersion field already exists in both and.",
    # issue 50: a path removed from heuristic:v5 cards of the shared transcripts (and issue 50's own examples)
    "Practical risk is low because. The fix was in manual_commit_migration.",
    "The output_filter setting (e.g., gitleaks-filter) is configured in, but secrets appear in plaintext.",
    "The tool writes transcripts to but ComputeTranscriptPath looks for them at",
    "The comment says stdout/stderr are sent to, but setting cmd.Stdout changes nothing.",
    "The shell completion installer appends a command line to or, and detects existing installs.",
    "Committed as, pushed, and replied to all 3 new comments.",
    "The unparam linter is flagging three unused parameters in. Asked: Mise run lint throws issues.",
    "Currently logging.Init creates a separate log file per session at.",
    "Claude code was pretty sure having hooks in   would override the user's hooks.",
    "This branch introduces a wrapper script approach that. Since env files are common, it checks first.",
    # a code span or a test report's counts removed (heuristic:v6 cards)
    "The importer splits on every comma with instead of using the csv module.",
    "The signature is now but the test calls pass only 3 args.",
    "npm test: failed (Tests: failed, passed)",
    "Resolved the Dialyzer false positive by using instead of extracting the trace id by hand.",
]
SOUND = [
    "Tests pass locally but fail in CI because of the lint step.",
    "Renamed the helper and logged in.",
    "The function returns more than expected, so the check fails.",
    "The root cause was that CI lints the merge with main, because main had new lint errors.",
    "Handle single lines exceeding MaxChunkSize (error or split) in chunking.go.",
    "Rebase the branch instead of merging main, rather than disabling the rule.",
    "Fixtures in a conftest are only visible to tests below its directory.",
    "The staged diff shows just changes to the multi-line string.",
    # issue 39: version numbers, flags and command names are words, not identifiers
    "Updated Go version from 1.25.5 to 1.25.6 in both files.",
    "None worked because the pre-commit hook blocks even with --no-verify",
    "Run mise run lint before pushing, then mise run test.",
    "The cache keeps entries from now on, and from time to time it is swept.",
    # issue 50: phrasal verbs and idioms need no object after "in" / "at" / "to"
    "The user logged in, but the session cookie was never set.",
    "The branch has checkpoint metadata commits mixed in.",
    "Let me look at the code it's pointing at.",
    "It copies the file to and from the cache, so both stay in sync.",
    "The default-enabled behavior means most users will stay opted in.",
    "Let me look at where the logging is initialized.",
    "npm test: failed (Tests: 3 failed, 12 passed)",
    "Ran go test: failed, which changed the course of the fix",
    "It works now but the lint step still fails.",
    "Add a validation helper that is consistently used instead of direct type casts.",
    "It makes two calls instead of one.",
]


@pytest.mark.parametrize("text", BROKEN)
def test_a_gap_left_by_a_removed_identifier_is_found(text: str) -> None:
    assert hole_breaks(text), text


@pytest.mark.parametrize("text", SOUND)
def test_a_sound_statement_is_left_alone(text: str) -> None:
    assert hole_breaks(text) == ()
    assert without_holes(text) == text


@pytest.mark.parametrize("text", BROKEN)
def test_mending_drops_the_clause_or_the_sentence_never_leaves_a_hole(text: str) -> None:
    mended = without_holes(text)
    assert hole_breaks(mended) == ()
    assert mended == "" or len(mended.split()) >= 4


def test_mending_keeps_the_sound_sentences_of_a_longer_text() -> None:
    text = (
        "A single JSONL line larger than the limit passes through without validation. "
        "In at line 84, the oversized line is simply added. Fix failing CI tests for transcript behavior."
    )
    mended = without_holes(text)
    assert mended.startswith("A single JSONL line larger than the limit passes through without validation.")
    assert mended.endswith("Fix failing CI tests for transcript behavior.") and "In at" not in mended


@pytest.mark.parametrize(
    ("command", "formatter"),
    [
        ("mise run fmt", True),
        ("gofmt -w .", True),
        ("npx prettier --write src", True),
        ("ruff format .", True),
        ("mise run lint", False),
        ("go test ./...", False),
        ("prettier --check src", False),
    ],
)
def test_a_formatter_run_is_told_from_a_check(command: str, formatter: bool) -> None:
    assert is_formatter(command) is formatter


def test_a_compound_command_is_named_by_its_check_not_its_formatter() -> None:
    assert check_segment("mise run fmt && mise run lint") == "mise run lint"
    assert check_segment("mise run fmt") == ""


def test_the_card_check_names_holes_and_formatter_checks() -> None:
    card = Card(
        problem="The lint error in is a pre-existing bug.",
        steps=["Ran go test: passed"],
        insight="",
        critical_checks=["Final check: mise run fmt passed", "Final check: mise run lint passed"],
        outcome=Outcome.VERIFIED,
    )
    found = hole_violations(card)
    assert any(v.startswith("problem: hole") for v in found)
    assert any("formatter run is not a check" in v and "fmt" in v for v in found)
    assert not any("mise run lint" in v for v in found)


def test_no_card_of_the_shipped_demo_corpus_has_a_hole() -> None:
    """The demo is what a new user reads first (quickstart): its cards hold to the same check."""
    from episodic.distill.heuristic import HeuristicDistiller
    from episodic.kernel.models import Trajectory
    from episodic.parse.claude_code import ClaudeCodeSource
    from episodic.scrub import default_scrubber
    from episodic.sessions.demo import DEMO_DIR

    source = ClaudeCodeSource(default_scrubber(), roots=[])
    cards = {}
    for found in source.discover([str(DEMO_DIR)]):
        loaded = source.load(found)
        if isinstance(loaded, Trajectory):
            cards[loaded.session_id] = HeuristicDistiller().distill(loaded, survey="").card
    assert len(cards) == 6
    assert {sid: hole_violations(card) for sid, card in cards.items() if hole_violations(card)} == {}


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("Updated Go version from 1.25.5 to 1.25.6 in both files:", "1.25.6"),
        ("None worked because the pre-commit hook blocks even with --no-verify", "--no-verify"),
        ("The lint step runs golangci-lint v2.1.0 with the default config", "v2.1.0"),
    ],
)
def test_plain_words_keeps_versions_and_flags(sentence: str, kept: str) -> None:
    """The problem's diagnosis and restatement drop code names, never a version or a flag."""
    from episodic.distill.heuristic_problem import plain_words

    assert kept in plain_words(sentence)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "Given your setup, pre-built binaries makes more sense because. Both files have been updated.",
            "Given your setup, pre-built binaries makes more sense. Both files have been updated.",
        ),
        ("The fix works for both strategies because.", "The fix works for both strategies."),
    ],
)
def test_a_because_left_before_a_dropped_list_is_said_without_the_word(text: str, kept: str) -> None:
    assert hole_breaks(text) == ("connective missing its clause",)
    assert without_holes(text) == kept


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "To resume the other session instead, exit Claude and run: claude -r 0276a600-2f22-4d2b-844c-3feb9c5aa108",
            "resume command",
        ),
        ("To resume the other session instead: claude -r test-session-1", "resume command"),
        ("To resume the other session instead, exit Claude and run: claude -r", "resume command"),
        ("[Request interrupted by user for tool use]", "interrupted marker"),
        # a decision about that very message, in the project that prints it, is the work's own
        (
            "To resume the other session instead -> To resume the other session instead, close here and run",
            None,
        ),
        ("Use claude -r in the docs example, because it is shorter than --resume.", None),
    ],
)
def test_agent_cli_boilerplate_is_told_from_a_decision(text: str, rule: str | None) -> None:
    from episodic.distill.boilerplate import boilerplate_of

    assert boilerplate_of(text) == rule
