"""A session's errors that it got past: a failed shell command with an error signature, and a later run of
the same check (same program and subcommand) that passed; what was edited in between, the agent's own
words about the cause, and the passing command. Everything shown is scrubbed and cut to one line."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from episodic.distill.evidence import (
    EDIT_TOOLS,
    call_passed,
    check_segment,
    command_segments,
    ordered_events,
    shell_command,
)
from episodic.failures.models import FailureFix
from episodic.failures.signature import Signature, signatures_of
from episodic.kernel.models import Event, ToolCall, Trajectory
from episodic.scrub import Scrubber

_SETUP = re.compile(r"^(?:cd|export|source|\.|set|unset|pushd|popd|echo|sleep)\b")
_WRAPPERS = frozenset({"sudo", "time", "env", "nice", "nohup", "xvfb-run", "exec"})
# programs whose first argument is the real command (`go test`, `npm run`, `uv run`)
_SUBCOMMANDS = frozenset(
    [
        "go",
        "cargo",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "mix",
        "mise",
        "npx",
        "uv",
        "poetry",
        "pipenv",
        "hatch",
        "pdm",
        "docker",
        "dotnet",
        "swift",
        "bazel",
        "deno",
        "just",
        "task",
        "make",
        "bundle",
        "git",
        "kubectl",
        "terraform",
        "helm",
        "gradle",
        "gradlew",
        "mvn",
        "rake",
        "pre-commit",
        "lefthook",
        "pip",
        "pip3",
    ]
)
_RUNNERS = frozenset({"run", "exec", "x"})  # `mise run test`, `npm run build`, `uv run pytest`
_PYTHONS = re.compile(r"^python3?(?:\.\d+)?$")
MAX_DIAGNOSIS_CHARS = 220
MAX_COMMAND_CHARS = 90
MAX_EDITS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_CAUSE = re.compile(
    r"\b(?:issues?|problem|cause[sd]?|because|root|the fix|missing|expects?|wants?|needs? to|instead of|"
    r"is (?:still |now )?(?:used|defined|declared|imported)|flag(?:s|ging)|complain\w*)\b",
    re.I,
)
_FILLER = re.compile(r"^(?:let me|now|good|great|perfect|ok|okay|i'll|i will|let's|next|first)\b", re.I)


def _words(segment: str) -> list[str]:
    words = segment.split()
    while words and (re.match(r"^\w+=", words[0]) or words[0] in _WRAPPERS):
        words = words[1:]
    if words and words[0] == "timeout" and len(words) > 1:
        words = words[2:]
    return words


def check_head(command: str) -> str:
    """What kind of check a command runs, as its program and subcommand (`go test`, `mise run lint`,
    `pytest`, `python3 -m pytest`): the check segment when there is one, else the first real segment."""
    segment = check_segment(command) or next(
        (s for s in command_segments(command) if not _SETUP.match(s)), ""
    )
    words = [w for w in _words(segment) if w != '""']
    if not words:
        return ""
    program = words[0].replace("\\", "/").rsplit("/", 1)[-1]
    head = [program]
    rest = [w for w in words[1:] if not w.startswith("-") or w == "-m"]
    if _PYTHONS.match(program) and rest[:1] == ["-m"] and len(rest) > 1:
        head += rest[:2]
    elif program in _SUBCOMMANDS and rest:
        head.append(rest[0])
        if rest[0] in _RUNNERS and len(rest) > 1:
            head.append(rest[1])
    return " ".join(head)[:60]


def one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _is_edit_event(event: Event) -> bool:
    return event.tool is not None and event.tool.name in EDIT_TOOLS


def _diagnosis(events: list[Event], start: int, end: int) -> str:
    """The agent's own words about the cause: among its remarks between the failure and the first edit
    after it (or the passing run), the latest naming a cause, else the latest that is not filler."""
    first_edit = next((i for i in range(start + 1, end) if _is_edit_event(events[i])), end)
    sentences = []
    for event in events[start + 1 : first_edit]:
        if event.kind == "assistant" and event.text.strip():
            text = _CODE_FENCE.sub(" ", event.text).strip()
            sentences += [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) >= 20]
    for wanted in (_CAUSE, None):
        for sentence in reversed(sentences):
            if not _FILLER.match(sentence) and (wanted is None or wanted.search(sentence)):
                return one_line(sentence, MAX_DIAGNOSIS_CHARS)
    return ""


def _edits(events: list[Event], start: int, end: int) -> list[str]:
    names: list[str] = []
    for event in events[start + 1 : end]:
        call = event.tool
        if call is None or call.name not in EDIT_TOOLS or call.is_error or call.rejected:
            continue
        path = call.file_path or str(call.input.get("file_path") or "")
        name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        if name and name not in names:
            names.append(name)
    return names[:MAX_EDITS]


def _when(call: ToolCall, trajectory: Trajectory) -> datetime:
    stamp = call.timestamp or trajectory.started_at or trajectory.ended_at or datetime.fromtimestamp(0, UTC)
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def fixes_of(trajectory: Trajectory, tenant_id: str, scrubber: Scrubber) -> list[FailureFix]:
    """One record per (error line, check) the session failed with and later passed (each of a failure's
    error lines: `signatures_of`); the first failure and the first pass after it. Never raises for odd calls (a call without a signature is skipped)."""
    events = ordered_events(trajectory)
    open_failures: dict[tuple[str, str], tuple[int, ToolCall, Signature]] = {}
    fixes: dict[tuple[str, str], FailureFix] = {}
    for position, event in enumerate(events):
        call = event.tool
        if call is None or event.kind != "tool":
            continue
        command = shell_command(call)
        if not command or call.rejected:
            continue
        head = check_head(command)
        if not head:
            continue
        if not call_passed(call):
            for signature in signatures_of(scrubber.scrub(call.output)):
                open_failures.setdefault((signature.key, head), (position, call, signature))
            continue
        for key in [k for k in open_failures if k[1] == head]:
            start, failed, signature = open_failures.pop(key)
            if key in fixes:
                continue
            fixes[key] = FailureFix(
                tenant_id=tenant_id,
                session_id=trajectory.session_id,
                key=signature.key,
                signature=signature.text,
                check=head,
                failed_command=one_line(scrubber.scrub(shell_command(failed)), MAX_COMMAND_CHARS),
                passed_command=one_line(scrubber.scrub(command), MAX_COMMAND_CHARS),
                edits=_edits(events, start, position),
                diagnosis=scrubber.scrub(_diagnosis(events, start, position)),
                failed_at=_when(failed, trajectory),
                passed_at=_when(call, trajectory),
                project=trajectory.project,
            )
    return list(fixes.values())
