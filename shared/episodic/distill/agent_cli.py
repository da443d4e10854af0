"""A coding agent's own CLI as distiller: one mechanism, with per-agent data (claude_code, codex, gemini).

Each agent (`AgentCli`) says how to call it headless (command line, stdin, environment), how to read its
answer and its usage, how it says "not logged in", and how to ask whether it is logged in without a model
call. Everything else is shared here: the card schema and prompt (distill.prompt), the run in an empty
folder with the recursion guard set, the card checks and one repair turn (as the Bedrock distiller), the
typed errors (not logged in: ConfigError; rate limit, overload, timeout: RetryableDistillError, so `index`
retries next run), and the planning figure for `inspect`.
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
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from episodic.distill.prompt import DISTILL_SYSTEM_PROMPT, repair_message, survey_message
from episodic.kernel.errors import ConfigError, DistillError, InvalidCardError, RetryableDistillError
from episodic.kernel.models import Card, DistillerInfo, DistillUsage, Trajectory
from episodic.kernel.ports import Distiller, DistillResult
from episodic.kernel.settings import Settings
from episodic.plumbing.marker import DISTILLER_MARKER

# Set for every distiller run: any episodic hook the CLI might still start does nothing (hook.py,
# dream/hook.py and session_distill check the same name).
GUARD_ENV = "EPISODIC_DISTILLING"
# Planning figure for `episodic inspect`: an ESTIMATE, not a measurement (no model was reachable here).
# Measured: each CLI's own overhead, start-up to result against a loopback mock API (record.py --measure,
# load ~12 on 2 cores): Claude Code ~1 s, Codex 2.3-3.9 s, Gemini 13.7-16.5 s (it also asks a router model).
# Estimated: a model's answer of a ~600-token card for a ~6k-token survey, ~15-40 s; 30 s is the middle.
SECONDS_PER_SESSION = 30.0
AUTH_TIMEOUT_SECONDS = 20.0  # a login check answers from local state (observed ~1 s)
# doctor's probe: one short session through the very call `index` makes (a small model call)
PROBE_SURVEY = (
    "User: rename the helper parse_cfg to parse_config. Agent: renamed it in 3 files; "
    "ran the tests: 12 passed. User: thanks."
)
RATE_RE = re.compile(
    r"rate.?limit|usage limit|hit your limit|limit reached|overloaded|too many requests|\(429\)|\(529\)"
    r"|\b429\b|resource.?exhausted|quota",
    re.I,
)
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})


@lru_cache(maxsize=1)
def card_schema_json() -> str:
    """The card's JSON schema (the single source of truth), compact, as a CLI argument or file."""
    return json.dumps(Card.json_schema(), separators=(",", ":"))


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[list[str], str, float, Path | None, Mapping[str, str] | None], CliRun]


def run_cli(
    command: list[str],
    stdin: str,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CliRun:
    """Run one CLI call; on timeout kill its whole process group (the CLI may start children)."""
    posix = os.name == "posix"
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
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


def first_line(text: str, limit: int = 200) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


@dataclass
class AgentAnswer:
    """What one CLI call answered: the card as an object (structured output) or as text, and its cost."""

    payload: dict[str, Any] | str
    usage: DistillUsage = field(default_factory=DistillUsage)
    models: list[str] = field(default_factory=list)


class AgentCli(ABC):
    """One agent's CLI: how to call it, read it, and tell "not logged in" (the per-agent data)."""

    kind: ClassVar[str]  # the `distiller` setting and the cards' DistillerInfo.kind
    label: ClassVar[str]  # how the user calls it
    default_binary: ClassVar[str]
    install_hint: ClassVar[str]
    login_fix: ClassVar[str]
    login_re: ClassVar[re.Pattern[str]]
    answer_rule: ClassVar[str]  # the system prompt's last lines: how this CLI hands back the card

    def system_prompt(self, schema: dict[str, Any]) -> str:
        """The distiller's instructions for this CLI."""
        return self.schema_rule(DISTILL_SYSTEM_PROMPT + "\n" + self.answer_rule, schema)

    def schema_rule(self, system: str, schema: dict[str, Any]) -> str:
        """The system text as this CLI needs it to answer in `schema` (unchanged: it takes a schema flag)."""
        return system

    @abstractmethod
    def command(
        self, binary: str, model: str | None, system: str, schema: dict[str, Any], workdir: Path
    ) -> list[str]:
        """The headless command line; the prompt goes on stdin (`stdin`)."""

    def stdin(self, system: str, prompt: str) -> str:
        """The marker first (a transcript of the run is skipped), then the system text, then the prompt."""
        marker = "" if system.startswith(DISTILLER_MARKER) else f"{DISTILLER_MARKER}\n\n"
        return f"{marker}{system}\n\n{prompt}"

    def env(self, workdir: Path) -> dict[str, str]:
        return {GUARD_ENV: "1"}

    @abstractmethod
    def read(self, run: CliRun) -> AgentAnswer:
        """The answer, or a typed error (`fail`) naming what the CLI said."""

    @abstractmethod
    def login(self, binary: str, runner: Runner, workdir: Path) -> tuple[bool | None, str]:
        """Without a model call: (True, how), (False, why) or (None, why unknown)."""

    def logged_out(self, how: str) -> str:
        """The one reason `setup`, `doctor` and `index` give when `login` answered (False, how)."""
        return f"{self.label} is {how}"

    def fail(self, detail: str, status: int | None = None, code: int | None = None) -> None:
        """Raise ConfigError for a login problem, RetryableDistillError for a limit; else return."""
        if status in (401, 403) or self.login_re.search(detail):
            raise ConfigError(f"{self.label} is not logged in: {self.login_fix} ({detail})")
        if status in RETRYABLE_STATUS or RATE_RE.search(detail):
            raise RetryableDistillError(
                f"{self.default_binary} is rate-limited or overloaded, retry later: {detail}"
            )


class AgentCliDistiller(Distiller):
    """Distills with the local CLI of a coding agent (the user's own login or API key)."""

    def __init__(
        self,
        agent: AgentCli,
        binary: str | None = None,
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
        self.agent = agent
        self.binary = binary or agent.default_binary
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.concurrency = (
            concurrency  # ingest distills in parallel when > 1 (episodic.core.ingest.distill_many)
        )
        # an empty folder: no project's instructions, settings or memory files are near the run
        self.workdir = workdir or Path(os.environ.get("TMPDIR", "/tmp")) / f"episodic-{agent.kind}-distill"
        self.runner = runner
        self.info = DistillerInfo(kind=agent.kind, model=model)
        self._cannot_run: str | None = None  # checked once, before the first call, then remembered
        self._checked = False

    # ------------------------------------------------------------ the call

    def resolve_binary(self) -> str:
        found = shutil.which(self.binary)
        if found is None:
            raise ConfigError(
                f"{self.agent.default_binary} CLI not found on PATH ({self.binary!r}); install it with "
                f"{self.agent.install_hint}, or use --distiller heuristic"
            )
        return found

    def command(
        self, binary: str, system: str | None = None, schema: dict[str, Any] | None = None
    ) -> list[str]:
        schema = schema if schema is not None else Card.json_schema()
        return self.agent.command(
            binary, self.model, system or self.agent.system_prompt(schema), schema, self.workdir
        )

    def _require_runnable(self) -> None:
        """Before the first call: a CLI that cannot run fails every session with one reason, without a call
        (logged out, Codex retries the API for minutes instead of saying so)."""
        if not self._checked:
            self._cannot_run, self._checked = self.cannot_run(), True
        if self._cannot_run is not None:
            raise ConfigError(self._cannot_run)

    def _run(self, system: str, prompt: str, schema: dict[str, Any]) -> tuple[AgentAnswer, float]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._require_runnable()
        command = self.command(self.resolve_binary(), system, schema)
        started = time.perf_counter()
        try:
            run = self.runner(
                command,
                self.agent.stdin(system, prompt),
                self.timeout_seconds,
                self.workdir,
                self.agent.env(self.workdir),
            )
        except subprocess.TimeoutExpired:
            raise RetryableDistillError(
                f"{self.agent.default_binary} did not answer within {self.timeout_seconds:g} s "
                "(distill_timeout_seconds)"
            ) from None
        except FileNotFoundError as exc:
            raise ConfigError(
                f"{self.agent.default_binary} CLI not found ({exc}); install it or use --distiller heuristic"
            ) from exc
        duration_ms = (time.perf_counter() - started) * 1000
        answer = self.agent.read(run)
        answer.usage.duration_ms = round(duration_ms, 1)
        return answer, duration_ms

    def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
        """One structured answer for another caller (the dream): the parsed object, or DistillError."""
        answer, _ = self._run(self.agent.schema_rule(system, schema), prompt, schema)
        if isinstance(answer.payload, dict):
            return answer.payload
        try:
            return json.loads(_strip_fence(answer.payload))
        except json.JSONDecodeError as exc:
            raise DistillError(f"{self.agent.kind} answered no JSON: {first_line(answer.payload)}") from exc

    # ------------------------------------------------------------ can it answer

    def login(self) -> tuple[bool | None, str]:
        """Is the CLI logged in? Asked without a model call (each agent's own local check)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            binary = self.resolve_binary()
        except ConfigError as exc:
            return False, str(exc)
        return self.agent.login(binary, self.runner, self.workdir)

    def cannot_run(self) -> str | None:
        """Why this distiller cannot run (its CLI not on PATH, or not logged in), asked without a model call;
        None when it can or when its login is unknown. `setup`, `doctor` and `index` all say this reason."""
        try:
            self.resolve_binary()
        except ConfigError as exc:
            return str(exc)
        logged_in, how = self.login()
        return self.agent.logged_out(how) if logged_in is False else None

    def probe(self) -> str:
        """One short distil call, as `index` makes it; raises as `distill` does (ConfigError: not logged in)."""
        system = self.agent.system_prompt(Card.json_schema())
        answer, duration_ms = self._run(system, self.prompt(PROBE_SURVEY), Card.json_schema())
        models = ", ".join(answer.models) or self.model or "the default model"
        return f"{models} answered in {duration_ms / 1000:.1f} s"

    # ------------------------------------------------------------ the card

    @staticmethod
    def prompt(survey: str, rejected: str = "", reason: str = "") -> str:
        if not reason:
            return survey_message(survey)
        return f"{survey_message(survey)}\n\nYour previous card:\n{rejected}\n\n{repair_message(reason)}"

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        from episodic.distill.checks import enforce_card, parse_card_payload  # `setup` only asks for a login

        schema = Card.json_schema()
        system = self.agent.system_prompt(schema)
        usage = DistillUsage(input_tokens=0, output_tokens=0)
        rejected = reason = first_reason = ""
        for attempt in range(2):  # the first answer, then one repair turn (as the Bedrock distiller)
            answer, _ = self._run(system, self.prompt(survey, rejected, reason), schema)
            _add_usage(usage, answer.usage)
            try:
                card = parse_card_payload(answer.payload)
                card, notes = enforce_card(card, trajectory)
            except InvalidCardError as exc:
                reason = str(exc)
                first_reason = first_reason or reason
                payload = answer.payload
                rejected = json.dumps(payload) if isinstance(payload, dict) else payload[:4000]
                continue
            if attempt:
                notes = [f"repaired after: {first_reason}", *notes]
            return DistillResult(card=card, usage=usage, notes=notes)
        raise DistillError(f"invalid card from {self.agent.kind} after one repair: {reason}")


def _add_usage(total: DistillUsage, one: DistillUsage) -> None:
    total.duration_ms = round(total.duration_ms + one.duration_ms, 1)
    total.input_tokens = (total.input_tokens or 0) + (one.input_tokens or 0)
    total.output_tokens = (total.output_tokens or 0) + (one.output_tokens or 0)
    if one.cost_usd is not None:
        total.cost_usd = (total.cost_usd or 0.0) + one.cost_usd


def _strip_fence(text: str) -> str:
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    return match.group(1) if match else text


AGENT_KINDS = ("claude-code", "codex", "gemini")
_SETTING_PREFIX = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}


def options_from(settings: Settings, kind: str) -> dict[str, Any]:
    """The distiller's options for agent `kind` from the settings (`<agent>_binary`, `<agent>_model`)."""
    prefix = _SETTING_PREFIX[kind]
    return {
        "binary": getattr(settings, f"{prefix}_binary"),
        "model": getattr(settings, f"{prefix}_model"),
        "timeout_seconds": settings.distill_timeout_seconds,
        "concurrency": settings.distill_concurrency,
        "workdir": settings.cache_dir / f"{kind}-distill",
    }


def estimate_agent_time(
    n_sessions: int, concurrency: int, seconds_per_session: float = SECONDS_PER_SESSION
) -> float:
    """Wall-clock seconds to distill n sessions with `concurrency` CLI calls in flight (an estimate)."""
    if n_sessions <= 0:
        return 0.0
    return math.ceil(n_sessions / max(1, concurrency)) * seconds_per_session
