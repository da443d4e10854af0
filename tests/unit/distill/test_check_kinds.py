"""Checks of every toolchain (distill/check_kinds.py): what ran and what its output says, both ways.

Commands are real: the ones issue 39 quotes from an unseen corpus (`bun verify`, `doppler run -- turbo run
typecheck`, `gh run view`, `gh pr checks`) and ones of the shared transcripts (`mise run lint`, `go test`).
Outputs follow the tools' documented formats (gh's non-TTY `pr checks` table is name<TAB>state<TAB>…)."""

from __future__ import annotations

import pytest
from episodic.distill.evidence import CheckResult, check_result, is_check_command
from episodic.kernel.models import ToolCall

# (command, is a check by its command alone)
COMMANDS = [
    ("bun verify", True),
    ("bun run verify", True),
    ("pnpm test:unit", True),
    ("yarn ci", True),
    ("doppler run -- turbo run typecheck", True),
    ("doppler run --project web --config dev -- pnpm test", True),
    ("op run --env-file .env -- npm test", True),
    ("npx turbo run lint --filter=web", True),
    ("nx run web:test", True),
    ("turbo typecheck", True),
    ("mise run lint 2>&1", True),
    ("go test ./cmd/entire/cli/... -count=1 2>&1 | tail -30", True),
    ("bun install", False),
    ("pnpm lint:fix", False),
    ("turbo run build --watch", False),
    ("doppler secrets download --no-file", False),
    ("npx next dev --port 3000", False),
    ("git push origin HEAD", False),
    ("yarn add zod", False),
]


@pytest.mark.parametrize(("command", "check"), COMMANDS)
def test_a_check_is_told_by_what_ran(command: str, check: bool) -> None:
    assert is_check_command(command) is check


def _call(command: str, output: str, code: int | None = 0) -> ToolCall:
    return ToolCall(
        id="t", name="Bash", input={"command": command}, output=output, exit_code=code, is_error=bool(code)
    )


PR_CHECKS_PASS = "build\tpass\t1m12s\thttps://github.com/o/r/actions/runs/1/job/2\nlint\tpass\t31s\thttps://github.com/o/r/actions/runs/1/job/3\n"
PR_CHECKS_FAIL = "build\tpass\t1m12s\thttps://github.com/o/r/actions/runs/1/job/2\ntest\tfail\t2m3s\thttps://github.com/o/r/actions/runs/1/job/4\n"
PR_CHECKS_PENDING = "build\tpass\t1m12s\thttps://x/1\ntest\tpending\t0\thttps://x/2\n"
RUN_VIEW_PASS = "✓ main CI · 12345678\nTriggered via push about 3 minutes ago\n\nJOBS\n✓ test in 2m1s (ID 1)\n✓ lint in 40s (ID 2)\n"
RUN_VIEW_FAIL = (
    "X main CI · 12345678\nTriggered via push about 3 minutes ago\n\nJOBS\n✓ lint in 40s (ID 2)\nX test in 2m1s (ID 1)\n"
    "  ✓ Set up job\n  X Run go test ./...\n\nANNOTATIONS\nX Process completed with exit code 1.\ntest: .github#1\n"
)
RUN_VIEW_RUNNING = "* main CI · 12345678\nTriggered via push less than a minute ago\n\nJOBS\n* test (ID 1)\n"

# (command, output, exit code, the check's result: None = not a check, or no verdict yet)
RESULTS = [
    ("gh pr checks 231", PR_CHECKS_PASS, 0, CheckResult.PASSED),
    ("gh pr checks 231", PR_CHECKS_FAIL, 1, CheckResult.FAILED),
    ("gh pr checks 231", PR_CHECKS_PENDING, 8, None),
    ("gh run view 12345678", RUN_VIEW_PASS, 0, CheckResult.PASSED),
    ("gh run view 12345678", RUN_VIEW_FAIL, 0, CheckResult.FAILED),  # `gh run view` exits 0 on a failed run
    ("gh run view 12345678", RUN_VIEW_RUNNING, 0, None),
    ("gh run watch 12345678 --exit-status", RUN_VIEW_FAIL, 1, CheckResult.FAILED),
    (
        "bun verify",
        "$ tsc --noEmit && bun test\n\n 42 pass\n 0 fail\nRan 42 tests across 9 files. [1.2s]",
        0,
        CheckResult.PASSED,
    ),
    (
        "doppler run -- turbo run typecheck",
        "web:typecheck: src/a.ts(3,1): error TS2304: Cannot find name 'x'.\n",
        2,
        CheckResult.FAILED,
    ),
    ("./scripts/precommit", "ruff....Passed\nmypy.....Passed\n12 passed in 3.10s\n", 0, CheckResult.PASSED),
    (
        "./scripts/precommit",
        "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed, 11 passed in 3.10s\n",
        1,
        CheckResult.FAILED,
    ),
    ("cat test-output.log", "1 failed, 11 passed in 3.10s\n", 0, None),  # a log shown, nothing ran
    ("tail -50 /tmp/ci.log", "FAIL  src/app.test.ts\nTests: 1 failed, 3 passed\n", 0, None),
    ("gh pr view 231", "title:\tAdd the export\nstate:\tOPEN\n", 0, None),
    ("python3 -c 'print(1)'", "1\n", 0, None),
]


@pytest.mark.parametrize(("command", "output", "code", "expected"), RESULTS)
def test_a_check_is_told_by_what_its_output_says(
    command: str, output: str, code: int, expected: CheckResult | None
) -> None:
    assert check_result(_call(command, output, code)) is expected
