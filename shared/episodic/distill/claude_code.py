"""The user's own Claude Code as distiller: `claude -p` headless, the card schema as structured output.

Every flag is documented in `claude --help` of @anthropic-ai/claude-code 2.1.197 (kept verbatim, with what
each flag was observed to do, in tests/fixtures/claude_help.txt). The CLI gets the scrubbed, budgeted survey
on stdin and no tools, MCP servers or hooks; session persistence is off so the run never becomes a
transcript (the stdin starts with DISTILLER_MARKER, so the parser skips one anyway). The card is validated
exactly like the Bedrock distiller's: schema + pydantic, the card rules, and the evidence check that can only
downgrade `verified`. No repair turn here: the CLI already retries invalid structured output itself.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.distill.prompt import DISTILL_SYSTEM_PROMPT, survey_message
from episodic.errors import ConfigError, DistillError, InvalidCardError, RetryableDistillError
from episodic.marker import DISTILLER_MARKER
from episodic.models import Card, DistillerInfo, DistillUsage, Trajectory
from episodic.ports import Distiller, DistillResult
from episodic.settings import Settings

# With --json-schema the CLI offers the model a tool named StructuredOutput (observed, 2.1.197).
SYSTEM_PROMPT = (
    DISTILL_SYSTEM_PROMPT + "\nThe card tool is called StructuredOutput. Call it once; write no other text.\n"
)
SESSION_NAME = "episodic-distill"  # a --name also spares the CLI's extra session-title request (observed)
# No hooks (our own prompt hook would inject memory into the distiller) and no CLAUDE.md memory files
# (the user's and the project's instructions are not part of the survey); both observed to work in 2.1.197.
DISTILL_SETTINGS = json.dumps({"disableAllHooks": True, "claudeMdExcludes": ["**/*"]})

# Planning figure for `episodic inspect`: an ESTIMATE, not a measurement (no model was reachable here).
# Measured: the CLI's own overhead (start-up to result, against a local mock API) is ~1 s. Estimated: a
# Sonnet answer of a ~600-token card for a ~6k-token survey, ~15-40 s; 30 s is the planning middle.
SECONDS_PER_SESSION = 30.0
AUTH_TIMEOUT_SECONDS = 20.0  # `claude auth status` answers from local state (observed ~1 s, 2.1.332)
# doctor's probe: one short session through the very call `index` makes (a small model call)
PROBE_SURVEY = (
    "User: rename the helper parse_cfg to parse_config. Agent: renamed it in 3 files; "
    "ran the tests: 12 passed. User: thanks."
)

_LOGIN_RE = re.compile(
    r"not logged in|please run /login|invalid api key|authentication_error|oauth token (?:has )?(?:expired|revoked)"
    r"|credit balance is too low",
    re.I,
)
_RATE_RE = re.compile(
    r"rate.?limit|usage limit|hit your limit|limit reached|overloaded|too many requests|\(429\)|\(529\)", re.I
)
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})


@lru_cache(maxsize=1)
def card_schema_json() -> str:
    """The card's JSON schema (the single source of truth) as the CLI's --json-schema argument."""
    return json.dumps(Card.json_schema(), separators=(",", ":"))


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[list[str], str, float, Path | None], CliRun]


def run_cli(command: list[str], stdin: str, timeout: float, cwd: Path | None = None) -> CliRun:
    """Run one CLI call; on timeout kill its whole process group (the CLI may start children)."""
    posix = os.name == "posix"
    with subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=posix,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            if posix:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.communicate()
            raise
    return CliRun(proc.returncode, stdout, stderr)


def _first_line(text: str, limit: int = 200) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def usage_from(result: dict[str, Any], duration_ms: float) -> DistillUsage:
    """Tokens summed over every model the CLI used (modelUsage), else its last-turn `usage`; its cost."""
    usage = DistillUsage(duration_ms=round(duration_ms, 1))
    per_model = result.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        counts = [m for m in per_model.values() if isinstance(m, dict)]
        usage.input_tokens = sum(
            int(m.get(k) or 0)
            for m in counts
            for k in ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
        )
        usage.output_tokens = sum(int(m.get("outputTokens") or 0) for m in counts)
    elif isinstance(result.get("usage"), dict):
        tokens = result["usage"]
        usage.input_tokens = sum(
            int(tokens.get(k) or 0)
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        usage.output_tokens = int(tokens.get("output_tokens") or 0)
    cost = result.get("total_cost_usd")
    if isinstance(cost, int | float):
        usage.cost_usd = float(cost)
    return usage


class ClaudeCodeDistiller(Distiller):
    """Distills with the local `claude` CLI (the user's own Claude Code login or API key)."""

    def __init__(
        self,
        binary: str = "claude",
        model: str | None = None,
        timeout_seconds: float = 180.0,
        concurrency: int = 2,
        workdir: Path | None = None,
        runner: Runner = run_cli,
    ) -> None:
        if timeout_seconds <= 0:
            raise ConfigError(f"distill_timeout_seconds must be > 0, got {timeout_seconds}")
        if concurrency < 1:
            raise ConfigError(f"distill_concurrency must be >= 1, got {concurrency}")
        self.binary = binary
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.concurrency = concurrency  # ingest distills in parallel when > 1 (episodic.ingest.distill_many)
        self.workdir = workdir  # an empty folder: no project's CLAUDE.md or auto-memory is near the run
        self.runner = runner
        self.info = DistillerInfo(kind="claude-code", model=model)

    @classmethod
    def from_settings(cls, settings: Settings) -> ClaudeCodeDistiller:
        return cls(
            binary=settings.claude_binary,
            model=settings.claude_model,
            timeout_seconds=settings.distill_timeout_seconds,
            concurrency=settings.distill_concurrency,
            workdir=settings.cache_dir / "claude-code-distill",
        )

    # ------------------------------------------------------------ the call

    def resolve_binary(self) -> str:
        found = shutil.which(self.binary)
        if found is None:
            raise ConfigError(
                f"claude CLI not found on PATH ({self.binary!r}); install it with "
                "`npm install -g @anthropic-ai/claude-code` (or set EPISODIC_CLAUDE_BINARY), "
                "or use --distiller heuristic"
            )
        return found

    def command(self, binary: str) -> list[str]:
        command = [
            binary,
            "-p",
            "--output-format",
            "json",
            "--json-schema",
            card_schema_json(),
            "--no-session-persistence",
            "--tools",
            "",
            "--strict-mcp-config",
            "--settings",
            DISTILL_SETTINGS,
            "--system-prompt",
            SYSTEM_PROMPT,
            "--name",
            SESSION_NAME,
        ]
        if self.model:
            command += ["--model", self.model]
        return command

    @staticmethod
    def prompt(survey: str) -> str:
        """The marker first: should a transcript of this run ever be written, the parser skips it."""
        return f"{DISTILLER_MARKER}\n\n{survey_message(survey)}"

    def _call(self, survey: str) -> tuple[dict[str, Any], float]:
        command = self.command(self.resolve_binary())
        if self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            run = self.runner(command, self.prompt(survey), self.timeout_seconds, self.workdir)
        except subprocess.TimeoutExpired:
            raise RetryableDistillError(
                f"claude did not answer within {self.timeout_seconds:g} s (distill_timeout_seconds)"
            ) from None
        except FileNotFoundError as exc:
            raise ConfigError(
                f"claude CLI not found ({exc}); install it or use --distiller heuristic"
            ) from exc
        duration_ms = (time.perf_counter() - started) * 1000
        return self._result_object(run), duration_ms

    def _result_object(self, run: CliRun) -> dict[str, Any]:
        try:
            result = json.loads(run.stdout)
        except json.JSONDecodeError:
            result = None
        if not isinstance(result, dict):
            detail = _first_line(run.stderr) or _first_line(run.stdout) or "no output"
            self._raise_for_message(detail, None)
            raise DistillError(f"claude exited with code {run.returncode} without a JSON result: {detail}")
        if (
            result.get("is_error")
            or run.returncode != 0
            or str(result.get("subtype", "")).startswith("error")
        ):
            errors = result.get("errors")
            errors = errors if isinstance(errors, list) else []
            detail = _first_line(str(result.get("result") or "")) or "; ".join(map(str, errors))
            detail = detail or _first_line(run.stderr) or str(result.get("subtype") or "unknown error")
            status = result.get("api_error_status")
            self._raise_for_message(detail, status if isinstance(status, int) else None)
            if result.get("subtype") == "error_max_structured_output_retries":
                raise DistillError(f"claude gave no card matching the schema: {detail}")
            raise DistillError(
                f"claude failed ({result.get('subtype', 'error')}, exit {run.returncode}): {detail}"
            )
        return result

    @staticmethod
    def _raise_for_message(detail: str, status: int | None) -> None:
        if status in (401, 403) or _LOGIN_RE.search(detail):
            raise ConfigError(f"Claude Code is not logged in: run `claude` once to log in ({detail})")
        if status in _RETRYABLE_STATUS or _RATE_RE.search(detail):
            raise RetryableDistillError(f"claude is rate-limited or overloaded, retry later: {detail}")

    # ------------------------------------------------------------ can it answer

    def login(self) -> tuple[bool | None, str]:
        """`claude auth status --json` (no model call): (True, how), (False, why) or (None, why unknown)."""
        if self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            run = self.runner(
                [self.resolve_binary(), "auth", "status", "--json"], "", AUTH_TIMEOUT_SECONDS, self.workdir
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            return None, f"its login is unknown: `claude auth status` did not answer ({type(exc).__name__})"
        try:
            status = json.loads(run.stdout)
        except json.JSONDecodeError:
            status = None
        if not isinstance(status, dict) or not isinstance(status.get("loggedIn"), bool):
            said = _first_line(run.stderr) or _first_line(run.stdout) or "no output"
            return (
                None,
                f"its login is unknown: `claude auth status --json` said {said!r} (exit {run.returncode})",
            )
        if not status["loggedIn"]:
            return False, "not logged in (run `claude` once to log in, or set ANTHROPIC_API_KEY)"
        return True, f"logged in ({status.get('authMethod') or 'unknown method'})"

    def probe(self) -> str:
        """One short distil call, as `index` makes it; raises as `distill` does (ConfigError: not logged in)."""
        result, duration_ms = self._call(PROBE_SURVEY)
        models = [m for m in result.get("modelUsage") or {} if isinstance(m, str)]
        return (
            f"{', '.join(models) or self.model or 'the default model'} answered in {duration_ms / 1000:.1f} s"
        )

    # ------------------------------------------------------------ the card

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        result, duration_ms = self._call(survey)
        usage = usage_from(result, duration_ms)
        structured = result.get("structured_output")
        payload: Any = structured if isinstance(structured, dict) else str(result.get("result") or "")
        try:
            card = parse_card_payload(payload)
            card, notes = enforce_card(card, trajectory)
        except InvalidCardError as exc:
            raise DistillError(f"invalid card from claude-code: {exc}") from exc
        return DistillResult(card=card, usage=usage, notes=notes)


# ---------------------------------------------------------------- planning


def estimate_claude_code_time(
    n_sessions: int, concurrency: int, seconds_per_session: float = SECONDS_PER_SESSION
) -> float:
    """Wall-clock seconds to distill n sessions with `concurrency` CLI calls in flight (an estimate)."""
    if n_sessions <= 0:
        return 0.0
    return math.ceil(n_sessions / max(1, concurrency)) * seconds_per_session
