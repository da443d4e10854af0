"""The survey: budgeted, deterministic, errors and last results always kept."""

from __future__ import annotations

from datetime import UTC, datetime

from episodic.kernel.models import Event, SessionSource, ToolCall, Trajectory
from episodic.sessions.survey import estimate_tokens, render_survey


def _traj(calls: int = 300, errors: tuple[int, ...] = (5, 150, 290), prompts: int = 30) -> Trajectory:
    tool_calls = []
    for i in range(1, calls + 1):
        failed = i in errors
        tool_calls.append(
            ToolCall(
                id=f"t{i}",
                name="Bash",
                command=f"go test ./pkg{i}/...",
                exit_code=1 if failed else 0,
                is_error=failed,
                output=(f"FAIL pkg{i}: boom " * 200) if failed else f"ok pkg{i} " * 100,
            )
        )
    tool_calls[-1] = ToolCall(
        id="last",
        name="Bash",
        command="go test ./...",
        exit_code=0,
        output="ok all packages LAST-RESULT-MARK",
    )
    texts = [f"prompt number {i} " + "detail " * 50 for i in range(prompts)]
    return Trajectory(
        session_id="s",
        source=SessionSource(session_key="s", main_path="x"),
        source_sha256="0",
        project="cli",
        git_branch="main",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        ended_at=datetime(2026, 1, 2, tzinfo=UTC),
        request=texts[0],
        prompts=texts,
        events=[Event(kind="tool", tool=c) for c in tool_calls],
        tool_calls=tool_calls,
        thinking=["thinking " * 100] * 40,
        compact_summaries=["summary one " * 300, "summary two " * 300],
        closing_summary="All tests pass now.",
    )


def test_estimate_tokens_is_chars_over_four() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


def test_unbounded_survey_holds_every_section() -> None:
    text = render_survey(_traj(), None)
    for heading in (
        "REQUEST:",
        "LATER PROMPTS:",
        "COMPACTION SUMMARIES",
        "TOOL CALLS:",
        "ERRORS (3",
        "LAST RESULTS:",
        "THINKING EXCERPTS:",
        "CLOSING SUMMARY",
    ):
        assert heading in text
    assert "project=cli branch=main 2026-01-01" in text
    assert "#300 Bash go test ./... → exit 0" in text


def test_budget_is_respected_and_errors_and_last_results_survive() -> None:
    traj = _traj()
    full = render_survey(traj, None)
    for budget in (6000, 2000, 1200):
        text = render_survey(traj, budget)
        assert estimate_tokens(text) <= budget < estimate_tokens(full)
        assert "LAST-RESULT-MARK" in text and "All tests pass now." in text
        for n in (5, 150, 290):
            assert f"#{n} Bash go test ./pkg{n}/... → error (exit 1)" in text
        assert "calls omitted" in text


def test_the_middle_goes_first() -> None:
    text = render_survey(_traj(), 3000)
    assert "#1 Bash" in text and "#299 Bash" in text and "#100 Bash go test ./pkg100/... → exit 0" not in text
    assert "THINKING EXCERPTS" not in text


def test_deterministic() -> None:
    traj = _traj()
    assert render_survey(traj, 2500) == render_survey(traj, 2500)


def test_tiny_budget_still_bounded() -> None:
    text = render_survey(_traj(), 100)
    assert estimate_tokens(text) <= 100


def test_small_session_is_not_padded() -> None:
    traj = _traj(calls=2, errors=(), prompts=1).model_copy(
        update={"thinking": ["brief"], "compact_summaries": []}
    )
    assert render_survey(traj, 6000) == render_survey(traj, None)
