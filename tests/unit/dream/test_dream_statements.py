"""What a dream record may say: holes, change logs, prompts as typed, projects by their repository's name,
duplicates by meaning, titles from card problems."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from episodic.dream.archive import LocalArchive
from episodic.dream.card_extract import thread_title
from episodic.dream.cycle import run_dream
from episodic.dream.exemplar import load_exemplar
from episodic.dream.statements import (
    PREFETCH_CHUNK,
    Meaning,
    as_title,
    holes,
    is_change_log,
    is_raw_prompt,
    project_name,
    statement_problems,
    title_problems,
)
from episodic.dream.weeks import IsoWeek
from episodic.embed.hashing import HashingEmbedder
from kits.dream_kit import ListWeekSource, digest


@pytest.mark.parametrize(
    "text",
    [
        "The lint error in is a pre-existing bug (it prints err instead of initErr).",
        "The panic happens at (line ) of the parser.",
        "Added imports for and logging package",
        "Initializes a test repo on a feature branch Creates a first session",
        "The fix works for both strategies because",
        "Moved the check into .",
        # issue 39's record: an identifier removed before "now", a line joined to the next one
        "The change at now calls GetGitAuthorFromRepo(repo) so the author is the repository's.",
        "Both set locally — returns local values Only name local — falls back to global for email",
        "A new row in the Configuration Options table for output_filter A new section explaining it",
        "Add convenience wrappers to avoid at every call site",
        "The config loader is read twice and then the…",
        "Prompt-submit lock file message — changed from to outputHookMessage so the message is visible",
        "The test checks for go run, but the wrapper script commands now use instead.",
        "Setup Claude Code hooks (setupClaudeCodeHook) Verifies it returns false when the folder exists",
        "Instead of lines 235-236",
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


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("They shouldn't contain secrets that get committed.", "unresolved pronoun"),
        ("It breaks when the branch has no upstream configured.", "unresolved pronoun"),
        ("This should run before the transcript is written to disk.", "this or that without its noun"),
        ("The function at line 1033-1045 filters transcripts, prompts, context.", "a code location"),
        ("The guard in hooks.go:296 returns early for detached sessions.", "a code location"),
    ],
)
def test_a_statement_that_leans_on_another_sentence_is_refused(text: str, why: str) -> None:
    assert why in statement_problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "It is safer to scrub the values before the transcript is written.",
        "This filter runs before the transcript is written, so secrets never reach the disk.",
    ],
)
def test_a_statement_that_stands_alone_passes(text: str) -> None:
    assert statement_problems(text) == []


def test_a_theme_is_titled_by_the_problem_not_a_code_location() -> None:
    problem = (
        "The function at line 1033-1045 filters transcripts, prompts, context. Secrets from env files reach the "
        "stored transcript before the filter runs. Asked: Fix the filter."
    )
    week = [digest(f"loc{n}0000-aaaa", f"2026-07-2{n}T10:00:00", problem=problem) for n in range(3)]
    title = thread_title(week, Meaning(HashingEmbedder()), frozenset({"fix the filter"}))
    assert title == "Secrets from env files reach the stored transcript before the filter runs"


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
        ("/home/a/elsewhere/feature-x", "repo", "repo"),  # a worktree its `.git` file named, as indexed
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


@pytest.mark.parametrize(
    "title",
    [
        "When:",
        "Refactor",
        "Context: the user asked for",
        "fix the thing",
        "Word the Gemini Preview section…",
        "Show the status in",
        "Fix (",
        "The lint error in is",
    ],
)
def test_a_word_a_fragment_or_a_holed_text_is_no_title(title: str) -> None:
    assert title_problems(title)


@pytest.mark.parametrize(
    "title",
    [
        "Fix: output_filter not being applied when writing to entire/sessions",
        "Unify the two ways that settings are parsed",
        "Work on telemetry.go and posthog-telemetry-integration.md (go, mise, cobra)",
    ],
)
def test_a_title_that_names_the_work_passes(title: str) -> None:
    assert title_problems(title) == []


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting its calls; `one_by_one` embeds each text in a call of its own."""

    def __init__(self, one_by_one: bool = False) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.one_by_one = one_by_one

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.one_by_one and len(texts) > 1:
            return np.concatenate([self.embed([t]) for t in texts])
        self.calls.append(len(texts))
        return super().embed(texts)


def test_prefetched_texts_are_embedded_once_in_few_calls() -> None:
    embedder = CountingEmbedder()
    meaning = Meaning(embedder)
    texts = [f"statement number {n} about the exporter" for n in range(PREFETCH_CHUNK + 5)]
    meaning.prefetch([*texts, texts[0]])
    assert embedder.calls == [PREFETCH_CHUNK, 5]  # under the embedder's bulk threshold, every text once
    assert meaning.distinct(texts[:3])[0] == 0 and meaning.centroid(texts).shape == (384,)
    assert embedder.calls == [PREFETCH_CHUNK, 5]  # later comparisons read the vectors embedded ahead
    assert meaning.distinct(["only one"]) == [0] and embedder.calls == [
        PREFETCH_CHUNK,
        5,
    ]  # nothing to compare


TOPICS = (
    "export transcript empty",
    "billing invoice rounding",
    "login session cookie",
    "chart axis labels",
    "search index rebuild",
)


def threaded_week() -> list:  # type: ignore[type-arg]
    """Five threads of three sessions each in week 2026-W30, each with decisions, insights and dead ends."""
    out = []
    for k, topic in enumerate(TOPICS):
        for n, day in enumerate((20, 21, 23)):
            out.append(
                digest(
                    f"t{k}n{n}000-aaaa-bbbb",
                    f"2026-07-{day}T1{k}:00:00",
                    problem=f"{topic} needs a fix in stage {n} of the {topic.split()[0]} module",
                    files=[f"src/{topic.split()[0]}.py", f"src/{topic.split()[1]}.py"],
                    project=topic.split()[0],
                    outcome="unverified" if n == 2 else "verified",
                    decisions=[f"keep the {topic} change in one pull request (step {n})"],
                    insight=f"the {topic} code re-read its input on every event (step {n})",
                    dead_ends=[f"caching the {topic} result did not help at all here"],
                )
            )
    return out


def test_a_week_is_embedded_in_a_few_calls_and_the_record_is_the_same_as_one_text_a_call(
    tmp_path: Path,
) -> None:
    week = IsoWeek(2026, 30)
    source = ListWeekSource(threaded_week())
    written = {}
    for one_by_one in (False, True):
        embedder = CountingEmbedder(one_by_one)
        archive = LocalArchive(tmp_path / str(one_by_one))
        now = datetime(2026, 8, 12, tzinfo=UTC)
        run_dream(
            source, archive, "local", [week], exemplar=load_exemplar(None), now=now, meaning=Meaning(embedder)
        )
        written[one_by_one] = [archive.read("local", week, kind) for kind in ("record", "synthesis")]
        if one_by_one:
            assert len(embedder.calls) > 30  # the week does compare many statements
        else:
            assert len(embedder.calls) <= 6, embedder.calls  # not a call per thread or per statement
    assert written[False] == written[True] and all(written[False])
