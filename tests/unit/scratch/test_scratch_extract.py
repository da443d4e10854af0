"""Outcome records from trajectories: what counts as notable, the one-line summary, dedup and the cap,
the no-diff/no-trace check, and secrets planted in tool output never reaching a record."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodic.scratch.check import summary_problems
from episodic.scratch.extract import clean_signature, error_signature, extract_outcomes
from episodic.scratch.models import ToolOutcome
from episodic.scrub import Scrubber
from kits.distill_builders import bash, edit, prompt, tool, trajectory

SCRUBBER = Scrubber()
TS_ERROR = (
    "src/auth/middleware.ts(12,5): error TS2304: Cannot find name 'UserContext'.\n"
    "Found 1 error in src/auth/middleware.ts:12\n"
)
TRANSCRIPTS = Path(__file__).resolve().parents[4] / "shared" / "transcripts"


def _records(*events):  # type: ignore[no-untyped-def]
    return extract_outcomes(trajectory(*events), "team", SCRUBBER).records


def test_a_failing_typecheck_names_the_tool_the_file_and_the_error_signature() -> None:
    (record,) = _records(
        prompt("rename UserContext to RequestUser across the auth middleware"),
        edit("/home/dev/proj/src/auth/middleware.ts"),
        bash("npx tsc --noEmit", TS_ERROR, exit_code=2),
    )
    assert record.outcome is ToolOutcome.FAIL and record.tool_name == "typecheck"
    assert record.summary == (
        "typecheck failed — error TS2304: Cannot find name 'UserContext'.; after editing middleware.ts"
    )
    assert record.tenant_id == "team" and record.session_id == "s-1"


def test_a_check_that_failed_then_passed_is_an_ok_record_citing_the_failure() -> None:
    records = _records(
        bash(
            "pytest tests/test_orders.py",
            "FAILED tests/test_orders.py::test_total - AssertionError",
            exit_code=1,
        ),
        edit("/home/dev/proj/shop/orders.py"),
        bash("pytest tests/test_orders.py", "3 passed in 0.2s"),
    )
    assert [(r.outcome.value, r.tool_name) for r in records] == [("fail", "tests"), ("ok", "tests")]
    assert records[1].summary.startswith("tests passed after failing on test_orders.py — was: FAILED")
    assert "after editing orders.py" in records[1].summary


def test_a_rejected_edit_and_a_command_that_failed_then_passed() -> None:
    records = _records(
        edit("/home/dev/proj/src/users/service.py", rejected=True),
        bash(
            "npm install",
            "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
            exit_code=1,
        ),
        bash("npm install", "added 120 packages"),
    )
    assert [(r.outcome.value, r.tool_name) for r in records] == [("fail", "edit"), ("ok", "command")]
    assert records[0].summary == "edit rejected by the user on service.py"
    assert (
        records[1].summary
        == "npm install failed then passed — was: npm ERR! ERESOLVE unable to resolve dependency tree"
    )


def test_passing_checks_and_plain_commands_are_not_notable() -> None:
    assert _records(bash("pytest", "10 passed"), bash("ls -la", "a b c"), tool("Read", "/x/y.py")) == []


def test_repeats_are_stored_once_and_a_session_keeps_at_most_the_cap() -> None:
    same = [bash("go test ./...", "--- FAIL: TestLogin (0.01s)", exit_code=1) for _ in range(3)]
    assert len(_records(*same)) == 1
    many = [bash(f"go test ./pkg{i}/...", f"--- FAIL: TestCase{i} (0.01s)", exit_code=1) for i in range(9)]
    extraction = extract_outcomes(trajectory(*many), "team", SCRUBBER, max_records=4)
    assert len(extraction.records) == 4 and extraction.candidates == 9


@pytest.mark.parametrize(
    "output",
    [
        'Traceback (most recent call last):\n  File "/app/x.py", line 3, in <module>\nValueError: bad',
        "diff --git a/x.py b/x.py\n@@ -1,3 +1,4 @@\n-old\n+new\nerror: patch failed: x.py:1",
        "goroutine 1 [running]:\nmain.main()\n\t/app/main.go:12 +0x1d\npanic: boom",
    ],
)
def test_raw_traces_and_diffs_never_reach_a_summary(output: str) -> None:
    for record in _records(
        bash("pytest -x", output, exit_code=1), bash("git apply fix.patch", output, exit_code=1)
    ):
        assert summary_problems(record.summary, SCRUBBER) == []
        assert "\n" not in record.summary and "/app/" not in record.summary and "@@" not in record.summary


@pytest.mark.parametrize(
    "summary",
    [
        'tests failed\n  File "x.py", line 3',
        "patch rejected — @@ -1,3 +1,4 @@ old new",
        "build failed — at handler (server.js:10:5)",
        "tests failed on /home/dev/proj/src/app.py",
        "x" * 201,
        "deploy failed — AKIAIOSFODNN7EXAMPLE rejected",
    ],
)
def test_the_check_refuses_traces_diffs_paths_overlong_lines_and_secrets(summary: str) -> None:
    assert summary_problems(summary, SCRUBBER)


def test_planted_secrets_in_tool_output_never_appear_in_a_record() -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    github = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    records = _records(
        bash("npm run deploy", f"Error: AccessDenied for key {secret} token {github}", exit_code=1),
        bash("npm run deploy", "done"),
        bash("pytest", f"E   AssertionError: expected {secret}", exit_code=1),
    )
    assert records
    for record in records:
        assert secret not in record.summary and github not in record.summary
        assert summary_problems(record.summary, SCRUBBER) == []


def test_signatures_drop_folders_line_numbers_and_wrapper_lines() -> None:
    assert clean_signature("src/auth/middleware.ts:12:5 - error TS2304: Cannot find name 'X'") == (
        "middleware.ts - error TS2304: Cannot find name 'X'"
    )
    assert error_signature(
        "[lint] ERROR task failed\nhooks.go:10:2: Error return value is not checked (errcheck)"
    ) == ("hooks.go: Error return value is not checked (errcheck)")


def test_records_carry_the_time_the_tool_ran() -> None:
    event = bash("mypy shop", 'shop/a.py:3: error: Name "x" is not defined', exit_code=1)
    assert event.tool is not None
    event.tool.timestamp = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    (record,) = _records(event)
    assert record.created_at == datetime(2026, 3, 1, 9, 30, tzinfo=UTC) and record.tool_name == "typecheck"


def test_a_future_time_is_clamped_to_when_the_file_was_written_at_the_latest_now() -> None:
    event = bash("mypy shop", 'shop/a.py:3: error: Name "x" is not defined', exit_code=1)
    assert event.tool is not None
    event.tool.timestamp = datetime(2099, 1, 1, tzinfo=UTC)
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    written = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    session = trajectory(event)
    (record,) = extract_outcomes(session, "team", SCRUBBER, now=now).records
    assert record.created_at == now  # no file time known: the time it was read
    session.source.mtime = written.timestamp()
    (record,) = extract_outcomes(session, "team", SCRUBBER, now=now).records
    assert record.created_at == written  # expired a week after the file was last written
    session.source.mtime = datetime(2099, 1, 1, tzinfo=UTC).timestamp()  # a file touched into the future
    (record,) = extract_outcomes(session, "team", SCRUBBER, now=now).records
    assert record.created_at == now


@pytest.mark.transcripts
def test_extraction_over_the_real_transcripts_passes_the_check_on_every_record() -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.skip("../shared/transcripts is absent")
    from episodic.assembly import build_source
    from episodic.kernel.settings import load_settings
    from episodic.scratch.report import extraction_report

    report = extraction_report(build_source(load_settings()), [str(TRANSCRIPTS)], SCRUBBER, "team")
    assert report.sessions > 50 and len(report.records) > 50
    assert report.check_failures == 0
    assert 0.2 < report.fail_share < 0.9
    assert all(len(r.summary) <= 200 and "\n" not in r.summary for r in report.records)
