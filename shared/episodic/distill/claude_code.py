"""The user's own Claude Code as distiller: `claude -p` headless, the card schema as structured output.

Every flag is documented in `claude --help` of @anthropic-ai/claude-code 2.1.197 (kept verbatim, with what
each flag was observed to do, in tests/fixtures/claude_help.txt). The CLI gets the scrubbed, budgeted survey
on stdin and no tools, MCP servers or hooks; session persistence is off so the run never becomes a
transcript (the stdin starts with DISTILLER_MARKER, so the parser skips one anyway). The shared mechanism
(checks, one repair turn, errors) is distill.agent_cli; this module is Claude Code's data.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from episodic.distill.agent_cli import (
    PROBE_SURVEY,
    SECONDS_PER_SESSION,
    AgentAnswer,
    AgentCli,
    AgentCliDistiller,
    CliRun,
    Runner,
    card_schema_json,
    estimate_agent_time,
    first_line,
    options_from,
    run_cli,
)
from episodic.kernel.errors import DistillError
from episodic.kernel.models import DistillUsage
from episodic.kernel.settings import Settings
from episodic.plumbing.marker import DISTILLER_MARKER

__all__ = [
    "PROBE_SURVEY",
    "SECONDS_PER_SESSION",
    "ClaudeCodeCli",
    "ClaudeCodeDistiller",
    "CliRun",
    "card_schema_json",
    "estimate_claude_code_time",
    "run_cli",
]

SESSION_NAME = "episodic-distill"  # a --name also spares the CLI's extra session-title request (observed)
# No hooks (our own prompt hook would inject memory into the distiller) and no CLAUDE.md memory files
# (the user's and the project's instructions are not part of the survey); both observed to work in 2.1.197.
DISTILL_SETTINGS = json.dumps({"disableAllHooks": True, "claudeMdExcludes": ["**/*"]})
AUTH_TIMEOUT_SECONDS = 20.0  # `claude auth status` answers from local state (observed ~1 s, 2.1.332)


def usage_from(result: dict[str, Any]) -> DistillUsage:
    """Tokens summed over every model the CLI used (modelUsage), else its last-turn `usage`; its cost."""
    usage = DistillUsage()
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


class ClaudeCodeCli(AgentCli):
    kind = "claude-code"
    label = "Claude Code"
    default_binary = "claude"
    install_hint = "`npm install -g @anthropic-ai/claude-code` (or set EPISODIC_CLAUDE_BINARY)"
    login_fix = "run `claude` once to log in"
    login_re = re.compile(
        r"not logged in|please run /login|invalid api key|authentication_error"
        r"|oauth token (?:has )?(?:expired|revoked)|credit balance is too low",
        re.I,
    )
    # With --json-schema the CLI offers the model a tool named StructuredOutput (observed, 2.1.197).
    answer_rule = "The card tool is called StructuredOutput. Call it once; write no other text.\n"

    def command(
        self, binary: str, model: str | None, system: str, schema: dict[str, Any], workdir: Path
    ) -> list[str]:
        command = [
            binary,
            "-p",
            "--output-format",
            "json",
            "--json-schema",
            json.dumps(schema, separators=(",", ":")),
            "--no-session-persistence",
            "--tools",
            "",
            "--strict-mcp-config",
            "--settings",
            DISTILL_SETTINGS,
            "--system-prompt",
            system,
            "--name",
            SESSION_NAME,
        ]
        return command + (["--model", model] if model else [])

    def stdin(self, system: str, prompt: str) -> str:
        """The system prompt goes by flag; the marker first here too: a transcript of the run is skipped."""
        return f"{DISTILLER_MARKER}\n\n{prompt}"

    def read(self, run: CliRun) -> AgentAnswer:
        result = self._result_object(run)
        structured = result.get("structured_output")
        payload: dict[str, Any] | str = (
            structured if isinstance(structured, dict) else str(result.get("result") or "")
        )
        models = [m for m in result.get("modelUsage") or {} if isinstance(m, str)]
        return AgentAnswer(payload, usage_from(result), models)

    def _result_object(self, run: CliRun) -> dict[str, Any]:
        try:
            result = json.loads(run.stdout)
        except json.JSONDecodeError:
            result = None
        if not isinstance(result, dict):
            detail = first_line(run.stderr) or first_line(run.stdout) or "no output"
            self.fail(detail)
            raise DistillError(f"claude exited with code {run.returncode} without a JSON result: {detail}")
        if (
            result.get("is_error")
            or run.returncode != 0
            or str(result.get("subtype", "")).startswith("error")
        ):
            errors = result.get("errors")
            errors = errors if isinstance(errors, list) else []
            detail = first_line(str(result.get("result") or "")) or "; ".join(map(str, errors))
            detail = detail or first_line(run.stderr) or str(result.get("subtype") or "unknown error")
            status = result.get("api_error_status")
            self.fail(detail, status if isinstance(status, int) else None)
            if result.get("subtype") == "error_max_structured_output_retries":
                raise DistillError(f"claude gave no card matching the schema: {detail}")
            raise DistillError(
                f"claude failed ({result.get('subtype', 'error')}, exit {run.returncode}): {detail}"
            )
        return result

    def login(self, binary: str, runner: Runner, workdir: Path) -> tuple[bool | None, str]:
        """`claude auth status --json` (no model call)."""
        try:
            run = runner([binary, "auth", "status", "--json"], "", AUTH_TIMEOUT_SECONDS, workdir, None)
        except (subprocess.TimeoutExpired, OSError) as exc:
            return None, f"its login is unknown: `claude auth status` did not answer ({type(exc).__name__})"
        try:
            status = json.loads(run.stdout)
        except json.JSONDecodeError:
            status = None
        if not isinstance(status, dict) or not isinstance(status.get("loggedIn"), bool):
            said = first_line(run.stderr) or first_line(run.stdout) or "no output"
            return (
                None,
                f"its login is unknown: `claude auth status --json` said {said!r} (exit {run.returncode})",
            )
        if not status["loggedIn"]:
            return False, "not logged in (run `claude` once to log in, or set ANTHROPIC_API_KEY)"
        return True, f"logged in ({status.get('authMethod') or 'unknown method'})"


class ClaudeCodeDistiller(AgentCliDistiller):
    """Distills with the local `claude` CLI (the user's own Claude Code login or API key)."""

    def __init__(self, binary: str = "claude", **options: Any) -> None:
        super().__init__(ClaudeCodeCli(), binary, **options)

    @classmethod
    def from_settings(cls, settings: Settings) -> ClaudeCodeDistiller:
        return cls(**options_from(settings, "claude-code"))


def estimate_claude_code_time(
    n_sessions: int, concurrency: int, seconds_per_session: float = SECONDS_PER_SESSION
) -> float:
    return estimate_agent_time(n_sessions, concurrency, seconds_per_session)
