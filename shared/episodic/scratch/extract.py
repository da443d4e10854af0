"""Outcome records from a scrubbed trajectory: a failing check, a rejected edit or failed patch, a check or
command that failed and then passed. At most a few per session, deduplicated, each summary one scrubbed
line that passed `summary_problems` (a record that does not is dropped and counted, never repaired).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from episodic.distill.checks import rule_breaks
from episodic.distill.evidence import (
    EDIT_TOOLS,
    CheckResult,
    check_result,
    command_segments,
    exited_ok,
    is_edit,
    normalise_command,
    shell_command,
)
from episodic.kernel.models import ToolCall, Trajectory
from episodic.scratch.check import summary_problems
from episodic.scratch.models import MAX_SUMMARY_CHARS, ScratchRecord, ToolOutcome
from episodic.scrub import Scrubber

DEFAULT_MAX_PER_SESSION = 4
SIGNATURE_CHARS = 100

# the check's kind, from the first checking segment of its command (first match wins)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("typecheck", re.compile(r"\b(?:tsc|mypy|pyright|typecheck|type-check|dialyzer|deno\s+check|cargo\s+check)\b")),
    ("tests", re.compile(r"\b(?:(?:mise|just|task|make)\s+(?:run\s+)?test\w*|pytest|py\.test|unittest|tox|nox|jest|vitest|rspec|phpunit|ctest|gotestsum"
                         r"|go\s+test|cargo\s+(?:test|nextest)|mix\s+test|deno\s+test|node\s+--test"
                         r"|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?t(?:est)?\b|playwright|make\s+test)")),
    ("lint", re.compile(r"\b(?:ruff|flake8|pylint|eslint|biome|golangci-lint|staticcheck|clippy|credo|go\s+vet"
                        r"|lint|fmt|format|prettier\s+--check|black\s+--check)\b")),
    ("build", re.compile(r"\b(?:build|compile|make|gradle\w*|mvn|webpack|vite)\b")),
    ("run", re.compile(r"\b(?:go\s+run|cargo\s+run|python3?|node|curl|docker)\b")),
)  # fmt: skip
# error signatures in a tool's output, best first: (pattern, group holding the signature)
_SIGNATURES: tuple[re.Pattern[str], ...] = (
    re.compile(r"error TS\d+: [^\n]+"),
    re.compile(r"(?m)^FAILED [^\n]+"),
    re.compile(r"(?m)^--- FAIL: [^\n]+"),
    re.compile(r"(?m)^E\s{2,}([^\n]+)"),
    re.compile(r"(?m)^error(?:\[E\d+\])?: [^\n]+"),
    re.compile(r"(?m)^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): [^\n]+"),
    re.compile(r"(?m)^\S+: error: [^\n]+"),
    re.compile(r"npm ERR! [^\n]+"),
    re.compile(r"(?m)^FAIL\s[^\n]+"),
    re.compile(r"(?m)^(?:Error|ERROR|fatal|FATAL): [^\n]+"),
    re.compile(r"(?m)^[^\n]*\b\d+ (?:failed|errors?)\b[^\n]*"),
    re.compile(r"(?im)^[^\n]*\b(?:error|failed|failure|cannot|not found|denied|refused)\b[^\n]*"),
)
_PATH_RE = re.compile(r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:[\w.@+-]*[/\\])+([\w.@+-]+)")
_LOCATION_RE = re.compile(r"((?:[\w-]+\.)+[A-Za-z]{1,6})(?::\d+)+|\(\d+,\d+\)|, line \d+")
_NOISE_RE = re.compile(r"0x[0-9a-fA-F]{4,}|\x1b\[[0-9;]*m|[`\"]{3,}|\s\(\d+(?:\.\d+)?m?s\)")
_FILE_ARG_RE = re.compile(r"(?:^|\s)(?:\S*/)?([\w.-]+\.[A-Za-z]{1,5})(?:::\w+)?(?=\s|$)")
_PREFIXES = ("sudo ", "time ", "env ")
_SETUP_RE = re.compile(r"^(?:cd|export|source|\.|set|unset|pushd|popd)\b|^\w+=\S*$")
_ASSIGN_RE = re.compile(r"^\w+=")
# lines that only say "something failed" (a task runner, make, npm): the real signature is elsewhere
_WRAPPER_RE = re.compile(
    r"ERROR task failed|^\[[\w:-]+\] ERROR|make(?:\[\d+\])?: \*\*\*|npm ERR! (?:code|errno|A complete log|\s*$)"
    r"|exit (?:status|code) \d+|Process completed with exit code|^FAIL$|^\d+ errors?$",
    re.I,
)
_CODE_RE = re.compile(r"[{}]|%\w*\{|\(\"|\w\(\)?\s*[,;)]|\s=\s|=>|->|::\w+\(")


@dataclass
class Extraction:
    """A session's records and what was dropped (a summary that broke a rule is counted, never stored)."""

    records: list[ScratchRecord] = field(default_factory=list)
    dropped: list[tuple[str, list[str]]] = field(default_factory=list)  # (summary, problems)
    candidates: int = 0


def clean_signature(text: str) -> str:
    """One short line: folders and line numbers dropped (a bare file name stays), noise removed."""
    text = text.replace("\\n", "\n").strip()  # JSON-escaped output keeps literal "\n"
    line = _NOISE_RE.sub("", text.splitlines()[0] if text else "")
    line = _PATH_RE.sub(lambda m: m.group(1), line)
    line = _LOCATION_RE.sub(lambda m: m.group(1) or "", line)
    line = " ".join(line.replace("\t", " ").split()).strip(" -:;,")
    return line if len(line) <= SIGNATURE_CHARS else line[: SIGNATURE_CHARS - 1].rstrip() + "…"


def _usable(signature: str) -> bool:
    """Not a task runner's wrapper line, and no code (a struct dump, a source line quoted by a linter)."""
    if not signature or _WRAPPER_RE.search(signature) or _CODE_RE.search(signature):
        return False
    return not rule_breaks(signature)


def error_signature(output: str) -> str:
    head = output[:6000]
    for pattern in _SIGNATURES:
        for match in pattern.finditer(head):
            found = clean_signature(match.group(1) if match.groups() else match.group(0))
            if _usable(found):
                return found
    return ""


def check_kind(command: str) -> str:
    for segment in command_segments(command):
        for kind, pattern in _KINDS:
            if pattern.search(segment):
                return kind
    return "check"


def _target(command: str) -> str:
    """The file a command names (`pytest tests/test_auth.py` → test_auth.py), else ''."""
    for segment in command_segments(command):
        match = _FILE_ARG_RE.search(segment)
        if match and not match.group(1).startswith("-"):
            return match.group(1)
    return ""


def _short_command(command: str) -> str:
    """The command's first real segment (not `cd`, `export` or an assignment), up to three words."""
    segments = [s for s in command_segments(command) if not _SETUP_RE.match(s)] or [command]
    first = segments[0]
    for prefix in _PREFIXES:
        first = first.removeprefix(prefix)
    words = [
        w for w in first.split() if not w.startswith("-") and not _ASSIGN_RE.match(w) and not _SETUP_RE.match(w)
        and any(c.isalnum() for c in w)
    ][:3]  # fmt: skip
    return clean_signature(" ".join(words))[:40]


def _basename(path: str | None) -> str:
    return (path or "").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _summary(what: str, verb: str, target: str, signature: str, context: str) -> str:
    text = f"{what} {verb}" + (f" on {target}" if target else "")
    if signature:
        text += f" — {signature}"
    if context:
        text += f"; {context}"
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"


def _when(call: ToolCall, trajectory: Trajectory, now: datetime) -> datetime:
    """When the tool ran, as the transcript says; a time in the future (a transcript dated 2099 would
    never expire) is clamped to when the file was last written, at the latest to `now`, when it is read."""
    stamp = call.timestamp or trajectory.ended_at or trajectory.started_at or now
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    if stamp <= now:
        return stamp
    written = trajectory.source.mtime
    return min(now, datetime.fromtimestamp(written, UTC)) if written > 0 else now


def _candidates(trajectory: Trajectory) -> list[tuple[ToolCall, str, ToolOutcome, str]]:
    """(call, tool kind, outcome, summary) for every notable call, in order."""
    found: list[tuple[ToolCall, str, ToolOutcome, str]] = []
    last_edit = ""
    failed_checks: dict[str, str] = {}  # kind -> signature of its last failure (until it passes)
    failed_commands: dict[str, str] = {}  # normalised command -> signature
    for call in trajectory.tool_calls:
        command = shell_command(call)
        if call.name in EDIT_TOOLS or (command and is_edit(call)):
            name = _basename(call.file_path) or _target(command)
            if call.rejected:
                found.append(
                    (call, "edit", ToolOutcome.FAIL, _summary("edit", "rejected by the user", name, "", ""))
                )
            elif call.is_error and (
                call.name == "apply_patch" or "patch" in command or "git apply" in command
            ):
                sig = error_signature(call.output)
                found.append((call, "patch", ToolOutcome.FAIL, _summary("patch", "rejected", name, sig, "")))
            elif not call.is_error:
                last_edit = name or last_edit
            continue
        if not command or call.rejected:
            continue
        context = f"after editing {last_edit}" if last_edit else ""
        result = check_result(call)
        if result is not None:
            kind = check_kind(command)
            target = _target(command)
            if result is CheckResult.FAILED:
                sig = error_signature(call.output)
                failed_checks[kind] = sig
                found.append((call, kind, ToolOutcome.FAIL, _summary(kind, "failed", target, sig, context)))
            elif kind in failed_checks:
                sig = failed_checks.pop(kind)
                found.append(
                    (
                        call,
                        kind,
                        ToolOutcome.OK,
                        _summary(kind, "passed after failing", target, f"was: {sig}" if sig else "", context),
                    )
                )
            continue
        key = normalise_command(command)
        if not exited_ok(call):
            failed_commands[key] = error_signature(call.output)
        elif key in failed_commands:
            sig = failed_commands.pop(key)
            what = _short_command(command) or "command"
            found.append(
                (
                    call,
                    "command",
                    ToolOutcome.OK,
                    _summary(what, "failed then passed", "", f"was: {sig}" if sig else "", context),
                )
            )
    return found


def _select(candidates: list[ScratchRecord], limit: int) -> list[ScratchRecord]:
    """Deduplicated (tool, outcome, summary), then the repairs (ok after a failure) and the latest failures."""
    unique: dict[tuple[str, str, str], ScratchRecord] = {}
    for record in candidates:
        unique[(record.tool_name, record.outcome.value, record.summary.lower())] = record  # latest wins
    ordered = sorted(unique.values(), key=lambda r: r.created_at)
    if len(ordered) <= limit:
        return ordered
    oks = [r for r in ordered if r.outcome is ToolOutcome.OK][-(limit // 2 or 1) :]
    fails = [r for r in ordered if r.outcome is ToolOutcome.FAIL][-(limit - len(oks)) :]
    return sorted([*oks, *fails], key=lambda r: r.created_at)[:limit]


def extract_outcomes(
    trajectory: Trajectory,
    tenant_id: str,
    scrubber: Scrubber,
    *,
    max_records: int = DEFAULT_MAX_PER_SESSION,
    now: datetime | None = None,
) -> Extraction:
    """The session's notable tool outcomes (scrubbed again, checked); never raises for odd calls."""
    now = now or datetime.now(UTC)
    extraction = Extraction()
    kept: list[ScratchRecord] = []
    for call, kind, outcome, summary in _candidates(trajectory):
        extraction.candidates += 1
        summary = scrubber.scrub(summary)
        problems = summary_problems(summary, scrubber)
        if problems:
            extraction.dropped.append((summary, problems))
            continue
        kept.append(
            ScratchRecord(
                tenant_id=tenant_id,
                session_id=trajectory.session_id,
                tool_name=kind,
                outcome=outcome,
                summary=summary,
                created_at=_when(call, trajectory, now),
            )
        )
    extraction.records = _select(kept, max_records)
    return extraction
