"""Checks of any toolchain, recognised by what ran and what its output says, not only by a command list.

`evidence._CHECK_RE` names the common test, build and lint commands. Beside it:
  - wrappers are looked through: a secrets or environment runner (`doppler run --`, `op run --`,
    `infisical run --`, `dotenvx run --`, `dotenv --`, `direnv exec DIR`, `with-env`) runs the command after it;
  - task runners and package scripts are checks when the task is named like one (`turbo run typecheck`,
    `nx run web:test`, `bun verify`, `pnpm test:unit`, `yarn ci`) — a script run without `run` included;
  - CI read back (`gh run view`, `gh run watch`, `gh pr checks`) is a check whose verdict is the CI's, read
    from its output ("✓ main CI", "build\tpass", "X test", "fail") and exit status; a pending run says nothing;
  - any other command whose output is a test or lint report ("Tests: 12 passed", "ok  \tpkg", "Found 0
    errors", "All checks passed") is a check, unless it only showed a file or a log (`cat`, `tail`, `grep`).
Real examples both ways: tests/unit/distill/test_check_kinds.py.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache

# a runner that sets up secrets or an environment, then runs the command after `--` (or after its folder)
_WRAPPER_RE = re.compile(
    r"^(?:(?:doppler|infisical|op|dotenvx|varlock|chamber|aws-vault|teller)\s+(?:run|exec)\b[^|;&]*?\s--\s+"
    r"|dotenv\b[^|;&]*?\s--\s+|direnv\s+exec\s+\S+\s+|with-env\s+|(?:npx|bunx|pnpm\s+(?:exec|dlx)|yarn\s+dlx)\s+(?=turbo|nx\b))"
)
_TASK_WORD = (
    r"(?:test|tests|lint|typecheck|type-check|types|check|checks|verify|validate|build|ci|e2e|tsc|unit|integration"
    r"|spec|format:check|fmt:check)"
)
# a task named like a check: `test`, `test:unit`, `lint:fix` aside, `web:typecheck` (nx project:target)
_TASK_NAME = rf"(?:[\w.@/-]+:)?{_TASK_WORD}(?::[\w-]+)?"
_RUNNER_TASK_RE = re.compile(
    rf"^(?:turbo(?:\s+run)?|nx(?:\s+run(?:-many)?)?|(?:npm|pnpm|yarn|bun)(?:\s+run)?|moon\s+run|lerna\s+run)"
    rf"(?:\s+-{{1,2}}[\w-]+(?:[= ][\w.:@/*-]+)?)*\s+(?:-t\s+)?{_TASK_NAME}(?:\s|$)"
)
_NOT_A_CHECK_TASK_RE = re.compile(r"(?:^|:)(?:fix|watch|dev|serve|start)\b|\s--(?:fix|write|watch)\b")

# CI read back
_CI_COMMAND_RE = re.compile(r"^gh\s+(?:run\s+(?:view|watch)|pr\s+checks)\b")
_CI_FAIL_RE = re.compile(
    r"(?im)^\s*(?:X|✗|×)\s|\t(?:fail|failure|cancelled|timed_out)\t|\b(?:completed\s+)?failure\b"
    r"|Process completed with exit code [1-9]|^\S.*\s(?:fail|failing)\s*$"
)
_CI_PASS_RE = re.compile(
    r"(?im)^\s*✓\s|\t(?:pass|success)\t|\bcompleted\s+success\b|All checks were successful"
)
_CI_PENDING_RE = re.compile(
    r"(?im)^\s*[*•]\s|\t(?:pending|queued|in_progress)\t|Some checks are still pending|is in progress"
)

# an output that is a test, build or lint report, whatever command printed it
_REPORT_RE = re.compile(
    r"(?m)\b\d+ (?:passed|failed|passing|failing)\b|^(?:Tests?|Test Suites|Test Files):\s+\d|^ok\s+\S+\s+[\d.]+s"
    r"|^(?:PASS|FAIL)\s+\S|^Ran \d+ tests? in |\bFound \d+ errors?\b|\bAll checks passed\b|\b\d+ problems? \(\d+ errors?"
    r"|^Checked \d+ files? in|✓ \d+ tests?|\b\d+ tests? (?:passed|failed|completed)|error TS\d+|Build succeeded|Compiled successfully"
)
_VIEWER_RE = re.compile(
    r"^(?:cat|less|more|head|tail|grep|egrep|rg|ag|sed|awk|echo|printf|ls|find|jq|yq|wc|diff|tee|git|gh|curl|wget"
    r"|open|code|vim?|nano|bat|type|stat|file|tree)\b"
)


class CIVerdict(Enum):
    PASSED = "passed"
    FAILED = "failed"
    PENDING = "pending"


@lru_cache(maxsize=4096)
def unwrapped(segment: str) -> str:
    """The command a secrets or environment wrapper runs (`doppler run -- turbo run typecheck` runs `turbo run
    typecheck`); the segment itself when it has no wrapper."""
    for _ in range(3):  # wrappers nest: `doppler run -- npx turbo run test`
        match = _WRAPPER_RE.match(segment)
        if match is None:
            break
        segment = segment[match.end() :]
    return segment


@lru_cache(maxsize=4096)
def runs_check_task(segment: str) -> bool:
    """A task runner or package script running a task named like a check (`bun verify`, `nx run web:test`)."""
    segment = unwrapped(segment)
    return bool(_RUNNER_TASK_RE.match(segment)) and not _NOT_A_CHECK_TASK_RE.search(segment)


def is_ci_read(segment: str) -> bool:
    return bool(_CI_COMMAND_RE.match(unwrapped(segment)))


def ci_verdict(output: str, exit_code: int | None) -> CIVerdict | None:
    """What a CI read-back showed: a failure anywhere fails it, a pending run says nothing yet; None when
    the output shows no verdict (an error of `gh` itself)."""
    text = output[:20000]
    if _CI_FAIL_RE.search(text) or exit_code == 1:
        return CIVerdict.FAILED
    if _CI_PENDING_RE.search(text) or exit_code == 8:  # gh pr checks: 8 = checks pending
        return CIVerdict.PENDING
    if _CI_PASS_RE.search(text):
        return CIVerdict.PASSED
    return None


def output_reports_check(segment: str, output: str) -> bool:
    """An unlisted command whose output is a test, build or lint report (not a file or log it displayed)."""
    if not output or _VIEWER_RE.match(unwrapped(segment)):
        return False
    return bool(_REPORT_RE.search(output[:20000]))
