"""What a trajectory's events prove: which tool calls change files, which are checks, and whether
a check passed. Shared by `judge_outcome` and the heuristic distiller (one reading of the trace)."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from operator import itemgetter

from episodic.distill.check_kinds import (
    CIVerdict,
    ci_verdict,
    is_ci_read,
    output_reports_check,
    runs_check_task,
    unwrapped,
)
from episodic.kernel.models import Event, ToolCall, Trajectory

EDIT_TOOLS = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool"}
    | {"apply_patch"}  # Codex CLI
    | {"write_file", "replace"}  # Gemini CLI
)
SHELL_TOOLS = frozenset(
    {"Bash", "bash", "BashOutput"}
    | {"shell", "exec_command", "local_shell_call", "container.exec"}  # Codex CLI
    | {"run_shell_command"}  # Gemini CLI
)

# Files written outside the project as scratch or plans are not changes to the work.
_SCRATCH_PATH_RE = re.compile(r"(?:^|/)(?:tmp|\.claude/plans|\.claude/todos)/|^/tmp/|^/private/tmp/")
# Prose files: a later edit to them does not undo the verification of the code before it.
_DOC_PATH_RE = re.compile(
    r"\.(?:md|mdx|markdown|rst|txt|adoc)$|(?:^|/)(?:docs?|LICENSE|CHANGELOG)(?:/|$)", re.I
)

# Shell commands that change tracked files (the check must come after them); matched per segment.
_SHELL_WRITE_RE = re.compile(
    r"^(?:sed\s+(?:-\w+\s+)*-i|perl\s+-\w*i|patch\b|tee\s+(?!-a)(?!/tmp/|/dev/|\S*\.(?:log|txt|out)\b)\S"
    r"|goimports\s+-w|mv\s|cp\s|apply_patch\b"
    r"|git\s+(?:apply|am|merge|rebase|cherry-pick|revert|restore|mv|rm|stash\s+(?:pop|apply)|reset\s+--hard"
    r"|checkout\s+(?:\S+\s+)?--\s))"
)
# Formatters only re-lay code out: cosmetic, neither an edit that needs re-verifying nor a check.
_FORMATTER_RE = re.compile(
    r"^(?:\w+=\S*\s+)*(?:gofmt|ruff\s+format|black|mix\s+format|cargo\s+fmt|(?:npx\s+)?prettier|go\s+fmt"
    r"|(?:mise|npm|pnpm|yarn|bun|make|just|task)\s+(?:run\s+)?(?:fmt|format)(?::\S+)?)(?:\s|$)(?!.*--check)"
)
_WRITE_FLAG_RE = re.compile(r"\s--(?:write|fix)\b")
_REDIRECT_RE = re.compile(r"(?<![0-9&>])>>?\s*(?!/dev/null|&|/tmp/)[\w./~-]+\.(?!log\b|txt\b|out\b|tmp\b)\w+")


@lru_cache(maxsize=4096)  # a session edits the same few files again and again
def _is_scratch(path: str) -> bool:
    return bool(_SCRATCH_PATH_RE.search(path))


@lru_cache(maxsize=4096)
def _is_doc(path: str) -> bool:
    return bool(_DOC_PATH_RE.search(path))


def _segment_writes(segment: str) -> bool:
    if _FORMATTER_RE.match(segment):
        return False
    return bool(
        _SHELL_WRITE_RE.match(segment)
        or ("--" in segment and _WRITE_FLAG_RE.search(segment))
        or (">" in segment and _REDIRECT_RE.search(segment))
    )


# Commands that check the work (tests, builds, linters, type checkers, running the program), at the
# start of a segment after env assignments and wrappers, so words inside commit messages never count.
_CHECK_RE = re.compile(
    r"^(?:\w+=\S*\s+)*(?:(?:sudo|time|env|nice|xvfb-run|(?:uv|poetry|pipenv|hatch|pdm)\s+run|timeout\s+\S+)\s+"
    r"(?:\w+=\S*\s+)*)*"
    r"(?:pytest|py\.test|tox|nox|mypy|pyright|ruff\s+check|ruff\b(?!\s+format)|flake8|pylint|black\s+--check"
    r"|go\s+(?:test|build|vet|run)|golangci-lint|staticcheck|gotestsum"
    r"|cargo\s+(?:test|build|check|clippy|run|nextest)"
    r"|(?:npm|pnpm|yarn|bun)\s+(?:test|t|run\s+[\w:.-]+|build|lint|check|typecheck)"
    r"|npx\s+(?:tsc|jest|vitest|eslint|biome|playwright|next\s+build|prettier\s+--check)"
    r"|tsc|jest|vitest|eslint|biome\s+(?:check|lint|ci)|deno\s+(?:test|check)|node\s+--test"
    r"|mix\s+(?:test|compile|credo|dialyzer|format\s+--check|phx\.server|run|precommit)"
    r"|make|just|mise\s+run|task\s+\w|gradle\w*|\./gradlew|mvn|dotnet\s+(?:test|build)|swift\s+(?:test|build)"
    r"|rspec|bundle\s+exec|rake|phpunit|ctest|cmake\s+--build|bazel\s+(?:test|build)"
    r"|python3?\s+(?:-m\s+(?:pytest|unittest|mypy|ruff)|[\w./-]+\.py)|pre-commit\s+run|lefthook\s+run"
    r"|(?:ba)?sh\s+\S*(?:test|check|lint|build)\S*|\./\S*(?:test|check|lint|build)\S*"
    r"|docker\s+(?:build|compose\s+(?:up|build|run))|curl\s.*\b(?:localhost|127\.0\.0\.1))(?:\s|$)"
)
_QUOTED_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\']*\'')  # unrolled: no per-char alternation
_SEGMENT_SPLIT_RE = re.compile(r"&&|\|\||[;|\n(]|\$\(")


@lru_cache(maxsize=4096)
def command_segments(command: str) -> tuple[str, ...]:
    """The simple commands of a shell line: quoted text and heredoc bodies removed, split on && || ; |."""
    if "<<" in command:
        command = command.split("\n", 1)[0]
    command = _QUOTED_RE.sub('""', command[:2000])
    return tuple(seg.strip() for seg in _SEGMENT_SPLIT_RE.split(command) if seg.strip())


_EXIT_CODE_RE = re.compile(r"(?:Exit code|exit status|exited with code)\s+(\d+)", re.I)

# The user's own word, in a prompt after the last edit. "thanks" alone is politeness, not evidence.
_CONFIRM_RE = re.compile(
    r"\b(?:(?:it|that|this|everything|all)\s+(?:now\s+)?(?:works|worked|is working|fixed it|did it|did the trick)"
    r"|works (?:now|perfectly|great|fine)|working now|now works|fixed it|(?:is|are) fixed now"
    r"|(?:tests?|checks?|ci|build|pipeline)\s+(?:now\s+|are\s+|is\s+)?(?:pass(?:es|ed|ing)?|green|succeed\w*)"
    r"|all green|problem solved|solved it|no more errors?)\b",
    re.I,
)
_DENY_RE = re.compile(
    r"\b(?:still\s+(?:\w+\s+)?(?:broken|fail\w*|not\s+work\w*|doesn'?t\s+work|the same|happen\w*|get(?:ting)?|see(?:ing)?"
    r"|error\w*|crash\w*|there|hangs?|empty|wrong)|(?:does\s*n[o']t|did\s*n[o']t|does not|did not|is not|isn'?t)\s+(?:work|fix|help)\w*"
    r"|not\s+working|no luck|same (?:error|problem|issue|failure)|nothing changed|made it worse|now (?:it )?(?:fails|crashes)"
    r"|(?:it|this|that|they|which)(?:'s| is| are)?\s+still\s+(?!works?\b|work(?:ing|ed)\b|pass|good|fine|ok|valid|green"
    r"|compil|build|succeed|correct|right|needed|required|useful|possible|there\b)\w+)\b",
    re.I,
)


class CheckResult(Enum):
    PASSED = "passed"
    FAILED = "failed"


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence after the last edit, in order."""

    position: int
    kind: str  # "check" | "rerun" | "user-confirm" | "user-deny"
    passed: bool
    detail: str


def shell_command(call: ToolCall) -> str:
    if call.command:
        return call.command
    cmd = call.input.get("command") if call.name in SHELL_TOOLS else None
    if isinstance(cmd, list):
        return " ".join(str(c) for c in cmd)
    return cmd if isinstance(cmd, str) else ""


def is_edit(call: ToolCall) -> bool:
    """A tool call that changed (or tried to change) files of the work."""
    if call.name in EDIT_TOOLS:
        path = call.file_path or str(call.input.get("file_path") or call.input.get("notebook_path") or "")
        return not _is_scratch(path)
    command = shell_command(call)
    return bool(command) and command_writes(command)


@lru_cache(maxsize=4096)
def command_writes(command: str) -> bool:
    return any(_segment_writes(seg) for seg in command_segments(command))


def _segment_checks(segment: str) -> bool:
    """A check named by its command, behind any wrapper (`doppler run -- turbo run typecheck`), or a task
    runner's or package script's task named like one (`bun verify`): `check_kinds`."""
    inner = unwrapped(segment)
    return bool(_CHECK_RE.match(inner) or runs_check_task(inner)) and not _FORMATTER_RE.match(inner)


@lru_cache(maxsize=4096)
def is_check_command(command: str) -> bool:
    return any(_segment_checks(seg) for seg in command_segments(command))


def is_formatter(command: str) -> bool:
    """A formatter run (`gofmt`, `mise run fmt`, `prettier --write`): neither a check nor evidence."""
    return bool(_FORMATTER_RE.match(command.strip()))


@lru_cache(maxsize=4096)
def check_segment(command: str) -> str:
    """The first simple command of a shell line that checks the work ("" if none): `mise run fmt && mise run
    lint` is named by its lint, never by the formatter before it."""
    return next((seg for seg in command_segments(command) if _segment_checks(seg)), "")


@lru_cache(maxsize=4096)
def checks_after_write(command: str) -> bool:
    """`sed -i … && go test`: the command's own check runs after its own write."""
    segments = command_segments(command)
    last_write = max((i for i, seg in enumerate(segments) if _segment_writes(seg)), default=-1)
    return any(_segment_checks(seg) for seg in segments[last_write + 1 :])


def exit_code(call: ToolCall) -> int | None:
    if call.exit_code is not None:
        return call.exit_code
    if call.is_error:
        match = _EXIT_CODE_RE.search(call.output[:300])
        return int(match.group(1)) if match else None
    return None


def exited_ok(call: ToolCall) -> bool:
    return not (call.is_error or call.interrupted) and exit_code(call) in (None, 0)


def call_passed(call: ToolCall) -> bool:
    """Exit status first; a zero status can still hide a failure behind `| tail`, so read the output."""
    if call.is_error or call.interrupted:
        return False
    code = exit_code(call)
    if code not in (None, 0):
        return False
    return not output_shows_failure(call.output)


# Failure evidence in a check's output (case-sensitive on purpose: "FAIL", "Error:", "3 failed"): one
# alternation (`test_distill_prefilters`), checked by parts, plain literals first and each pattern only
# where a literal it needs occurs (the whole alternation at once was slow: docs/performance.md).
_OUTPUT_FAIL_LITERALS = (
    "--- FAIL", "Traceback (most recent", "npm ERR!", "✗", "✖",
    "Build failed", "build failed", "Compilation failed", "compilation failed",
)  # fmt: skip
_OUTPUT_FAIL_PARTS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("FAIL",), re.compile(r"^FAIL\b|\bFAILED\b", re.M)),
    # `\b[1-9]` as `[1-9](?<!\w[1-9])`: a leading class lets the engine skip ahead to the digits
    ((" fail", " error"), re.compile(r"[1-9](?<!\w[1-9])\d* (?:failed|failing|failures?|errors?)\b")),
    (("panic: ",), re.compile(r"^panic: ", re.M)),
    (("rror: ", "RROR: ", "rror[E"), re.compile(r"^\s*(?:error(?:\[E\d+\])?|Error|ERROR): ", re.M)),
    (("error TS",), re.compile(r"error TS\d")),
    (("** (",), re.compile(r"\*\* \(\w+Error\)")),
    (("Process completed",), re.compile(r"Process completed with exit code [1-9]")),
)


@lru_cache(maxsize=1024)
def output_shows_failure(output: str) -> bool:
    for literal in _OUTPUT_FAIL_LITERALS:
        if literal in output:
            return True
    for needles, pattern in _OUTPUT_FAIL_PARTS:
        for needle in needles:
            if needle in output:
                if pattern.search(output):
                    return True
                break
    return False


def check_result(call: ToolCall) -> CheckResult | None:
    """PASSED / FAILED for a check command that ran; None for anything else."""
    if call.rejected or (call.name not in SHELL_TOOLS and not call.command):
        return None
    command = shell_command(call)
    if not command or (call.interrupted and not call.output):
        return None
    if is_ci_command(command):  # CI read back: the CI's verdict, not the exit status of `gh` alone
        verdict = ci_verdict(call.output, exit_code(call))
        if verdict is None or verdict is CIVerdict.PENDING:
            return None
        return CheckResult.PASSED if verdict is CIVerdict.PASSED else CheckResult.FAILED
    if not is_check_command(command) and not _reports_check(command, call.output):
        return None
    return CheckResult.PASSED if call_passed(call) else CheckResult.FAILED


_SETUP_SEGMENT_RE = re.compile(r"^(?:cd|export|source|set|pushd|\.)\s")


def _reports_check(command: str, output: str) -> bool:
    """An unlisted command whose output is a test or lint report (`check_kinds.output_reports_check`)."""
    first = next((seg for seg in command_segments(command) if not _SETUP_SEGMENT_RE.match(seg + " ")), "")
    return bool(first) and output_reports_check(first, output)


@lru_cache(maxsize=4096)
def is_ci_command(command: str) -> bool:
    """`gh run view`, `gh run watch`, `gh pr checks`: the CI's result read back."""
    return any(is_ci_read(seg) for seg in command_segments(command))


def normalise_command(command: str) -> str:
    return " ".join(command.split())


def user_confirms(prompt: str) -> bool:
    return len(prompt) <= 400 and bool(_CONFIRM_RE.search(prompt)) and not _DENY_RE.search(prompt)


def user_denies(prompt: str) -> bool:
    return bool(_DENY_RE.search(prompt[:600]))


def ordered_events(traj: Trajectory) -> list[Event]:
    """The trajectory's events; rebuilt from prompts and tool calls when a source gave none."""
    if traj.events:
        return traj.events
    events = [Event(kind="prompt", text=p) for p in traj.prompts[:1]]
    events += [Event(kind="tool", tool=c) for c in traj.tool_calls]
    events += [Event(kind="prompt", text=p) for p in traj.prompts[1:]]
    return events


def tool_calls_in(events: list[Event]) -> list[tuple[int, ToolCall]]:
    """(position, call) of every tool event; a list: cheaper than resuming a generator per call."""
    return [
        (position, event.tool)
        for position, event in enumerate(events)
        if event.tool is not None and event.kind == "tool"
    ]


def calls_before(calls: list[tuple[int, ToolCall]], position: int) -> list[tuple[int, ToolCall]]:
    """The calls of `tool_calls_in(events)` before `position`: `tool_calls_in(events[:position])`."""
    return calls[: bisect_left(calls, position, key=itemgetter(0))]


def is_doc_edit(call: ToolCall) -> bool:
    path = call.file_path or str(call.input.get("file_path") or "")
    return call.name in EDIT_TOOLS and _is_doc(path)


def last_edit_position(
    events: list[Event], calls: list[tuple[int, ToolCall]] | None = None
) -> tuple[int | None, bool]:
    """(position of the last applied edit, whether any edit was attempted at all).

    Edits to prose files (docs, notes, plans in markdown) count only when nothing else was edited.
    `calls`: `tool_calls_in(events)` when the caller has it already (one walk of the events)."""
    last_code: int | None = None
    last_doc: int | None = None
    last_attempted: int | None = None
    for position, call in tool_calls_in(events) if calls is None else calls:
        if not is_edit(call):
            continue
        last_attempted = position
        if call.rejected or call.is_error:
            continue
        if is_doc_edit(call):
            last_doc = position
        else:
            last_code = position
    applied = last_code if last_code is not None else last_doc
    return (applied if applied is not None else last_attempted), last_attempted is not None


def evidence_after(
    events: list[Event], start: int, calls: list[tuple[int, ToolCall]] | None = None
) -> list[Evidence]:
    """Checks, reruns of earlier failures, and the user's verdicts after position `start` (`calls` as
    for `last_edit_position`)."""
    failed_before = {
        normalise_command(command)
        for _, call in (tool_calls_in(events[:start]) if calls is None else calls_before(calls, start))
        if (command := shell_command(call))
        and not call.rejected
        and not call.interrupted
        and not exited_ok(call)
    }
    found: list[Evidence] = []
    edit_call = events[start].tool if 0 <= start < len(events) else None
    own_check = edit_call is not None and checks_after_write(shell_command(edit_call))
    for position in range(start if own_check else start + 1, len(events)):
        event = events[position]
        if event.kind == "prompt":
            if user_denies(event.text):
                found.append(Evidence(position, "user-deny", False, event.text[:120]))
            elif user_confirms(event.text):
                found.append(Evidence(position, "user-confirm", True, event.text[:120]))
            continue
        call = event.tool
        if event.kind != "tool" or call is None or call.rejected:
            continue
        result = check_result(call)
        command = shell_command(call)
        if result is not None:
            found.append(Evidence(position, "check", result is CheckResult.PASSED, command))
        elif command and normalise_command(command) in failed_before and exited_ok(call):
            # a non-check failing again says little (network, auth); its success says the fix took
            found.append(Evidence(position, "rerun", True, command))
    return found


# A test run (not a lint, format, type or build step): what a failing test needs to pass again.
_TEST_CHECK_RE = re.compile(
    r"(?:^|\s)(?:pytest|py\.test|tox|go\s+test(?!\s.*\s-c\b)|cargo\s+(?:test|nextest)|jest|vitest|mix\s+test|rspec"
    r"|phpunit|ctest|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test|unittest|node\s+--test|deno\s+test|gotestsum"
    r"|(?:mise|make|just|task)\s+(?:run\s+)?test)\b"
)
# A line that only logs or prints (or is blank / a comment): an edit of such lines changes no behaviour.
_DEBUG_LINE_RE = re.compile(
    r"^\s*(?:$|#|//|--|/\*|\*|(?:print|println|printf|eprintln!|println!|dbg!|puts|pp|console\.\w+|fmt\.\w*print\w*"
    r"|log(?:ger)?\.\w+|slog\.\w+|logging\.\w+|IO\.(?:inspect|puts)|Logger\.\w+|debug\w*|t\.Log\w*)\b)",
    re.I,
)
# CI configuration: only a CI run exercises it, never a local check.
_CI_PATH_RE = re.compile(
    r"(?:^|/)(?:\.github/workflows/|\.gitlab-ci\.ya?ml$|\.circleci/|azure-pipelines\.ya?ml$)"
)


def is_test_command(command: str) -> bool:
    return any(_TEST_CHECK_RE.search(seg) for seg in command_segments(command))


def _changed_lines(call: ToolCall) -> list[str] | None:
    """The lines an Edit/MultiEdit call added or removed; None when not known (a whole-file write)."""
    if call.name == "Edit":
        pairs = [(call.input.get("old_string"), call.input.get("new_string"))]
    elif call.name == "MultiEdit" and isinstance(call.input.get("edits"), list):
        pairs = [
            (e.get("old_string"), e.get("new_string")) for e in call.input["edits"] if isinstance(e, dict)
        ]
    else:
        return None
    changed: list[str] = []
    for old, new in pairs:
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        before, after = old.splitlines(), new.splitlines()
        changed += [line for line in after if line not in before] + [
            line for line in before if line not in after
        ]
    return changed


def only_debug_edits(calls: list[ToolCall]) -> bool:
    """Every edit only adds or removes logging, prints, comments or blank lines."""
    applied = [c for c in calls if is_edit(c) and not c.rejected and not c.is_error]
    if not applied:
        return False
    for call in applied:
        lines = _changed_lines(call)
        if lines is None or not all(_DEBUG_LINE_RE.match(line) for line in lines):
            return False
    return True


def is_ci_config_edit(call: ToolCall) -> bool:
    path = call.file_path or str(call.input.get("file_path") or "")
    return call.name in EDIT_TOOLS and bool(_CI_PATH_RE.search(path))
