"""Injected context (an orchestrator's instruction block, agents' environment and AGENTS.md preambles) is not
the user's request: the request that follows it is, for Claude Code, Codex and Gemini sessions alike.

The fixture (tests/fixtures/injected/) is synthetic: three agents' sessions started through an orchestrator
that puts the same `<system_instruction>You are working inside …` block before each request."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.distill.heuristic import HeuristicDistiller
from episodic.kernel.models import Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.parse.codex import CodexSource
from episodic.parse.gemini import GeminiSource
from episodic.parse.injected import reads_injected, split_injected
from episodic.parse.text import clean_user_text
from episodic.scrub import default_scrubber

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "injected"
REQUESTS = {
    "1a1a1a1a-0000-4000-8000-000000000001": "The login form accepts an empty password",
    "1b1b1b1b-0000-4000-8000-000000000002": "CSV export drops rows whose note contains a newline",
    "0199cccc-0000-7000-8000-000000000003": "The cache never expires entries after the configured TTL",
    "1d1d1d1d-0000-4000-8000-000000000004": "Dark mode resets to light after every page reload",
}


def _trajectories() -> dict[str, Trajectory]:
    found: dict[str, Trajectory] = {}
    for source, folder in (
        (ClaudeCodeSource(default_scrubber(), roots=[]), FIXTURE / "claude-code"),
        (CodexSource(default_scrubber(), roots=[]), FIXTURE / "codex"),
        (GeminiSource(default_scrubber(), roots=[]), FIXTURE / "gemini"),
    ):
        for session in source.discover([str(folder)]):
            loaded = source.load(session)
            assert isinstance(loaded, Trajectory), loaded
            found[loaded.session_id] = loaded
    return found


def test_every_agent_s_first_prompt_is_the_request_after_the_block() -> None:
    trajectories = _trajectories()
    assert set(trajectories) == set(REQUESTS)
    for session_id, traj in trajectories.items():
        assert traj.request.startswith(REQUESTS[session_id]), (session_id, traj.request)
        assert "You are working inside" not in " ".join(traj.prompts)


def test_cards_of_sessions_behind_the_same_block_can_be_told_apart() -> None:
    cards = {sid: HeuristicDistiller().distill(t, survey="").card for sid, t in _trajectories().items()}
    problems = [card.problem for card in cards.values()]
    assert len(set(problems)) == len(problems)
    for problem in problems:
        assert "working inside" not in problem and not reads_injected(problem), problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "<system_instruction>You are working inside X.</system_instruction>\n\nFix the login.",
            "Fix the login.",
        ),
        ("<System-Instructions>\nBe brief.\n</System-Instructions> why is CI red", "why is CI red"),
        (
            "<workspace_context>branch: a</workspace_context>\n<user_query>fix it</user_query>",
            "<user_query>fix it</user_query>",
        ),
        ("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nUse ruff.\n</INSTRUCTIONS>", ""),
        ("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>", ""),
        ("This is the Gemini CLI. We are setting up the context for our chat.\nMy OS is linux", ""),
        (
            "<ide_opened_file>The user opened the file a.py in the IDE.</ide_opened_file> add a test",
            "add a test",
        ),
    ],
)
def test_an_injected_block_is_split_from_the_request(text: str, expected: str) -> None:
    blocks, rest = split_injected(text)
    assert blocks and rest == expected


@pytest.mark.parametrize(
    "text",
    [
        "why does <div> break the layout on mobile",
        "<task>fix the flaky login test</task>",
        "Wrap the value in <context> tags? No: the docs say <b>bold</b> is fine",  # unclosed: kept as typed
        "# Plan: speed up the build\n\nCache the deps.",
        "You are right, the cache was stale.",
    ],
)
def test_the_user_s_own_markup_is_kept(text: str) -> None:
    assert clean_user_text(text).text == text.strip()
