"""The readability check (distill/readability.py): real card fields both ways.

The broken fields are from heuristic:v4 cards of the shared transcripts and the cards issue 39 quotes; the
sound ones are fields of the same cards (and of the LLM cards in ../shared/eval/cards) that must pass."""

from __future__ import annotations

import pytest
from episodic.distill.readability import check_cards, echoes, from_injected, is_complete, is_cut
from episodic.kernel.models import Card, Outcome

CUT = [
    'mix test: failed ([do: %Plug.Conn{adapter: {Plug.Adapters.Test.Conn,:...}, body_params: %{"session_id" => "abc"}…',
    "Look at the changes in this branch, I got this feedback, let me know what you think before doing anythning Redundant…",
    'Ran go test: failed (concurrent_session_warning_test.go: Received expected blocking response: {"continue":false,"stopRea',
    "Lately, I've noticed you being very tentative. \"I've identified a clear problem. I should do X to fix it.",
    "The output was [… 4120 chars cut …] and then the build stopped",
]
WHOLE = [
    "Final check: mix dialyzer passed",
    "None worked because the pre-commit hook blocks even with --no-verify",
    "Lint and test failures:(. The signature changed but the test calls pass only 3 args.",
    "Handle single lines exceeding MaxChunkSize (error or split) in chunking.go.",
    "Updated Go version from 1.25.5 to 1.25.6 in both files.",
]
INCOMPLETE = [
    "Updated Go version from to in both files.",  # a hole
    "The lint error in is a pre-existing bug (it prints err instead of initErr).",
    "- the issue is the function doesn't exist with that name (later shown wrong)",
    "Both set locally — returns local values Only name local — falls back to global for email and",
    "When:",
    "Fix it.",
]
COMPLETE = [
    "The root cause was that CI lints the merge with main, because main had new lint errors.",
    "Reuse the existing author-resolution helper rather than writing new logic, for consistency across all commits",
    "You may want to run mise install to install the new Go version.",
    "Do you have access to linear?",
]


@pytest.mark.parametrize("text", CUT)
def test_a_field_cut_midway_is_found(text: str) -> None:
    assert is_cut(text) and not is_complete(text) and not is_complete(text, phrase=True)


@pytest.mark.parametrize("text", WHOLE)
def test_a_whole_field_is_not_called_cut(text: str) -> None:
    assert not is_cut(text)


@pytest.mark.parametrize("text", INCOMPLETE)
def test_a_fragment_or_a_holed_statement_is_not_complete(text: str) -> None:
    assert not is_complete(text)


@pytest.mark.parametrize("text", COMPLETE)
def test_a_statement_is_complete(text: str) -> None:
    assert is_complete(text)


PROMPT = (
    'in common.go:296 we are initializing the shadow branch with "entire@local" could we change this to use '
    "the current git user in the same way we do this on shadow branches?"
)


@pytest.mark.parametrize(
    ("problem", "echo"),
    [
        (
            'In common.go we are initializing the shadow branch with "entire@local" could we change this?',
            True,
        ),
        ("Update go in all the right places to 1.25.6.", True),
        ("A metadata branch was initialised with a placeholder author instead of the git identity.", False),
        (
            "Shadow branch author. Asked: In common.go we are initializing the shadow branch.",
            False,
        ),  # lead first
        ("Fix it.", False),  # too short to tell
    ],
)
def test_a_problem_echoing_the_first_prompt_is_found(problem: str, echo: bool) -> None:
    prompt = (
        PROMPT
        if "common.go" in problem or "Shadow" in problem or "metadata" in problem
        else ("update go in all the right places to 1.25.6")
    )
    assert echoes(problem, prompt) is echo


def test_a_problem_taken_from_an_injected_block_is_found() -> None:
    block = "<system_instruction>You are working inside a parallel agent workspace.</system_instruction>\n\nFix the login."
    assert from_injected("You are working inside a parallel agent workspace.", block)
    assert from_injected("You are working inside a parallel agent workspace. Fix the login.")
    assert not from_injected("Fix the login form accepting empty passwords.", block)


def test_the_report_counts_every_field_once() -> None:
    card = Card(
        problem="Update go in all the right places to 1.25.6. Updated Go version from to in both files.",
        steps=["Read mise.toml, go.mod", "Ran mix test: failed ([do: %Plug.Conn{adapter: …)"],
        insight="You may want to run mise install to install the new Go version.",
        outcome=Outcome.UNVERIFIED,
    )
    report = check_cards({"s1": card}, {"s1": "update go in all the right places to 1.25.6"}).as_dict()
    assert report["fields"] == 4 and report["holes"] == 1 and report["cuts"] == 1
    assert report["echoes"] == 1 and report["echo_share"] == 1.0 and report["injected"] == 0
    assert report["complete_share"] == 0.5  # the holed problem and the cut step
    assert check_cards({"s1": card}).as_dict()["echo_share"] is None  # no prompt: not measured
