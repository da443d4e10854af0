"""What a dream record may say: holes, change logs, prompts as typed, projects by their repository's name,
duplicates by meaning, titles from card problems."""

from __future__ import annotations

import pytest
from episodic.dream.statements import (
    Meaning,
    as_title,
    holes,
    is_change_log,
    is_raw_prompt,
    project_name,
    statement_problems,
)
from episodic.embed.hashing import HashingEmbedder


@pytest.mark.parametrize(
    "text",
    [
        "The lint error in is a pre-existing bug (it prints err instead of initErr).",
        "The panic happens at (line ) of the parser.",
        "Added imports for and logging package",
        "Initializes a test repo on a feature branch Creates a first session",
        "The fix works for both strategies because",
        "Moved the check into .",
    ],
)
def test_a_statement_with_a_hole_is_refused(text: str) -> None:
    assert holes(text)


@pytest.mark.parametrize(
    "text",
    [
        "Reuse the existing author-resolution helper rather than writing new logic, for consistency.",
        "Isolate global git config in tests by pointing the home directory at a temp dir.",
        "Regenerating fixtures by script keeps them in step with the live output.",
    ],
)
def test_a_whole_statement_passes(text: str) -> None:
    assert statement_problems(text) == []


def test_change_logs_and_status_lines_are_not_decisions_or_insights() -> None:
    assert is_change_log("Updated TestShellCompletionTarget — replaced the fish_unsupported test case")
    assert is_change_log("All tests pass, including integration tests.")
    assert is_change_log("This is an intentional trade-off.")
    assert not is_change_log(
        "Replaced the hand-rolled retry with the client's own, because it honours Retry-After"
    )


def test_a_prompt_as_typed_whole_or_one_sentence_of_it() -> None:
    prompts = ['Update Multi-Session Warning Message. instead of "Another sessions..." Print something like.']
    assert is_raw_prompt("Update Multi-Session Warning Message", prompts)
    assert is_raw_prompt('Instead of "Another sessions..." Print something like.', prompts)
    assert not is_raw_prompt("The multi-session warning names the running session", prompts)


def test_titles_lose_the_requests_addressing_but_keep_its_subject() -> None:
    assert as_title("Can you fix merge conflicts from parent please") == "Fix merge conflicts from parent"
    assert as_title("A metadata branch was initialised with a placeholder author. More.") == (
        "A metadata branch was initialised with a placeholder author"
    )
    assert len(as_title("word " * 60)) <= 91


@pytest.mark.parametrize(
    ("cwd", "fallback", "name"),
    [
        ("/Users/alex/workspace/cli/.worktrees/2", "2", "cli"),
        ("/Users/alex/workspace/cli/.worktrees/3", "3", "cli"),
        ("/home/a/repo/.claude/worktrees/feature-x", "feature-x", "repo"),
        ("/Users/soph/Work/entire/devenv/cli", "cli", "cli"),
        ("/srv/app/7", "7", "app"),
        ("", "exporter", "exporter"),
    ],
)
def test_projects_are_named_by_their_repository_not_a_worktree_fragment(
    cwd: str, fallback: str, name: str
) -> None:
    assert project_name(cwd, fallback) == name


def test_duplicates_by_meaning_keep_the_first_of_each() -> None:
    meaning = Meaning(HashingEmbedder())
    texts = [
        "The lint error is a pre-existing bug: it prints err instead of initErr",
        "Ship the export as one pull request",
        "The lint error is a pre-existing bug where it prints err instead of initErr",
    ]
    assert meaning.distinct(texts) == [0, 1]
    assert meaning.thresholds.same_statement == 0.60  # the hashing family's stated threshold
