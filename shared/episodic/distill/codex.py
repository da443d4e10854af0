"""The user's own Codex CLI as distiller: `codex exec` headless, the card schema as `--output-schema`.

Every flag is in `codex exec --help` of @openai/codex 0.171.0 (kept verbatim in
tests/fixtures/agent_cli/codex_exec_help.txt). The survey goes on stdin (`-` as the prompt); the run is
`--ephemeral` (no rollout file; the stdin starts with DISTILLER_MARKER, so the parser would skip one
anyway), `--ignore-user-config` (no MCP servers, profiles or hooks from `$CODEX_HOME/config.toml`; the login
in `$CODEX_HOME` still applies), `--ignore-rules`, hooks, plugins, apps, the shell tools and every other tool
disabled by feature flag (`codex features list`) or `-c` (web search, request_user_input): the model is
offered no tool, and a call a hostile endpoint sends anyway is "unsupported"; a read-only sandbox, in an
empty folder. `--json` prints one event a
line (developers.openai.com/codex/noninteractive): the card is the last `item.completed` agent_message,
the tokens are in `turn.completed`, a failure is `turn.failed` or `error`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

from episodic.distill.agent_cli import AgentAnswer, AgentCli, CliRun, Runner, first_line
from episodic.kernel.errors import DistillError
from episodic.kernel.models import DistillUsage

LOGIN_TIMEOUT_SECONDS = 20.0
# Off while distilling, each a feature of `codex features list` (0.171): our hooks, the user's plugins and
# apps (connectors), every way to run a command, and every other tool a model could call (view_image runs
# even when not offered: a hostile endpoint's call read an image off the disk; goals; sub-agents).
DISABLED_FEATURES = (
    "hooks", "plugins", "apps", "shell_tool", "unified_exec", "view_image", "goals", "multi_agent",
)  # fmt: skip
# The tools no feature switches off (config keys of 0.171, `-c`): web search and request_user_input.
DISABLED_TOOL_CONFIG = ('web_search="disabled"', "tools.experimental_request_user_input.enabled=false")
# What OpenAI's strict structured outputs accept; the rest (lengths, defaults) our own check enforces.
_STRICT_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "enum", "items", "description", "anyOf"}
)


def strict_schema(node: Any) -> Any:
    """The schema with only the keywords strict structured outputs accept (lengths are checked after)."""
    if isinstance(node, list):
        return [strict_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: strict_schema(prop) for name, prop in value.items()}
        elif key in _STRICT_KEYS:
            out[key] = strict_schema(value)
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def schema_file(schema: dict[str, Any], workdir: Path) -> Path:
    """`--output-schema` takes a path: the schema written once per content into the distiller's folder."""
    text = json.dumps(strict_schema(schema), separators=(",", ":"), sort_keys=True)
    path = workdir / f"schema-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    if not path.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # threads share a pid
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path


class CodexCli(AgentCli):
    kind = "codex"
    label = "Codex CLI"
    default_binary = "codex"
    install_hint = "`npm install -g @openai/codex` (or set EPISODIC_CODEX_BINARY)"
    login_fix = "run `codex login` (or set CODEX_API_KEY)"
    login_re = re.compile(
        r"not logged in|\b401\b|unauthori[sz]ed|missing bearer|invalid[_ ]api[_ ]key|incorrect api key"
        r"|token (?:has )?expired|refresh token|please (?:log ?in|sign in)|codex login",
        re.I,
    )
    answer_rule = (
        "Your final message is the card: one JSON object that matches the output schema, every field "
        "filled. Run no commands and read no files; write no other text.\n"
    )

    def command(
        self, binary: str, model: str | None, system: str, schema: dict[str, Any], workdir: Path
    ) -> list[str]:
        command = [
            binary,
            "exec",
            "--json",
            "--ephemeral",
            "--skip-git-repo-check",
            "--ignore-user-config",
            "--ignore-rules",
        ]
        for feature in DISABLED_FEATURES:
            command += ["--disable", feature]
        for setting in DISABLED_TOOL_CONFIG:
            command += ["-c", setting]
        command += [
            "--sandbox",
            "read-only",
            "--color",
            "never",
            "--cd",
            str(workdir),
            "--output-schema",
            str(schema_file(schema, workdir)),
        ]
        if model:
            command += ["--model", model]
        return [*command, "-"]  # the prompt from stdin

    def read(self, run: CliRun) -> AgentAnswer:
        message: str | None = None
        failure = ""
        errors: list[str] = []
        usage = DistillUsage()
        for line in run.stdout.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            item = event.get("item")
            if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
                message = str(item.get("text") or "")
            elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
                tokens = event["usage"]
                usage.input_tokens = (usage.input_tokens or 0) + int(tokens.get("input_tokens") or 0)
                usage.output_tokens = (usage.output_tokens or 0) + int(tokens.get("output_tokens") or 0)
            elif kind == "turn.failed":
                error = event.get("error")
                failure = str(error.get("message") if isinstance(error, dict) else error or "turn failed")
            elif kind == "error":
                errors.append(str(event.get("message") or ""))
        if message is not None and not failure:
            return AgentAnswer(message, usage)
        detail = first_line(failure) or first_line(errors[-1] if errors else "") or first_line(run.stderr)
        detail = detail or "no output"
        self.fail(detail)
        raise DistillError(f"codex exited with code {run.returncode} without a card: {detail}")

    def login(self, binary: str, runner: Runner, workdir: Path) -> tuple[bool | None, str]:
        """`codex login status` (local: "Authentication is checked when you send a request", 0.171)."""
        if os.environ.get("CODEX_API_KEY"):
            return True, "logged in (CODEX_API_KEY is set; `codex exec` uses it)"
        try:
            run = runner([binary, "login", "status"], "", LOGIN_TIMEOUT_SECONDS, workdir, None)
        except (subprocess.TimeoutExpired, OSError) as exc:
            return None, f"its login is unknown: `codex login status` did not answer ({type(exc).__name__})"
        said = "\n".join(
            line for line in (run.stdout + "\n" + run.stderr).splitlines() if not line.startswith("WARNING")
        )
        if run.returncode == 0 and re.search(r"logged in using|api key configured|logged in", said, re.I):
            return True, f"logged in ({first_line(said)})"
        if re.search(r"not logged in", said, re.I):
            return False, "not logged in (run `codex login`, or set CODEX_API_KEY)"
        if re.search(r"CODEX_HOME points to .* does not exist", said):  # no folder, no saved login
            return False, f"not logged in ({first_line(said.split('Error loading configuration: ')[-1])})"
        return (
            None,
            f"its login is unknown: `codex login status` said {first_line(said)!r} (exit {run.returncode})",
        )
