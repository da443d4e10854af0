"""The user's own Gemini CLI as distiller: `gemini -p` headless with `--output-format json`.

Every flag is in `gemini --help` of @google/gemini-cli 0.61.0 (kept verbatim in
tests/fixtures/agent_cli/gemini_help.txt). Gemini CLI has no schema flag, so the schema is in the prompt
and the card is read from the JSON output's `response` (geminicli.com/docs/cli/headless: `response`,
`stats`, `error`); a card that fails the checks gets the shared repair turn. Off while distilling: every MCP
server (`--allowed-mcp-server-names` naming none that exists), every extension (`-e none`), and hooks
through the run folder's own workspace settings (`.gemini/settings.json`), read because the run trusts its
folder (GEMINI_CLI_TRUST_WORKSPACE=true, as `--skip-trust` sets it; an untrusted folder's settings are
ignored; a system settings file is skipped unless root owns every folder above it). The run is in an empty
folder, so no project GEMINI.md is near it (the user's global one is always loaded). Gemini CLI writes a chat
file for a headless run too; its first user text is DISTILLER_MARKER, so the parser skips it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from episodic.distill.agent_cli import GUARD_ENV, AgentAnswer, AgentCli, CliRun, Runner, first_line
from episodic.kernel.errors import ConfigError, DistillError
from episodic.kernel.models import DistillUsage

NO_MCP_SERVER = "episodic-distiller-no-server"  # an allow-list of one name no server has
PROMPT_FLAG_TEXT = "Write the memory card for the survey above, as instructed."  # appended to stdin
TRUST_ENV = "GEMINI_CLI_TRUST_WORKSPACE"  # checkPathTrust, 0.61: "true" trusts the folder
AUTH_EXIT = 41  # FATAL_AUTHENTICATION_ERROR (observed: no auth method configured, 0.61)
DISTILL_SETTINGS: dict[str, Any] = {
    "hooksConfig": {"enabled": False},
    "context": {"includeDirectoryTree": False},
    "tools": {"core": []},  # an allow-list of no built-in tool: none is registered (0.61's maybeRegister)
}


def distill_settings_file(workdir: Path) -> Path:
    """The run folder's workspace settings: hooks and the directory tree off (they override the user's)."""
    path = workdir / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # threads share a pid
    tmp.write_text(json.dumps(DISTILL_SETTINGS, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def gemini_dir(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def _dotenv_has(path: Path, name: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(rf"^\s*(?:export\s+)?{name}\s*=\s*\S", text, re.M) is not None


class GeminiCli(AgentCli):
    kind = "gemini"
    label = "Gemini CLI"
    default_binary = "gemini"
    install_hint = "`npm install -g @google/gemini-cli` (or set EPISODIC_GEMINI_BINARY)"
    login_fix = "run `gemini` once and choose a sign-in method (or set GEMINI_API_KEY)"
    login_re = re.compile(
        r"please set an auth method|api key not valid|api_key_invalid|unauthenticated"
        r"|invalid authentication credentials|re-?authenticate|login required|no authentication is configured",
        re.I,
    )
    answer_rule = "There is no card tool here: answer with the card itself.\n"

    def schema_rule(self, system: str, schema: dict[str, Any]) -> str:
        """No schema flag: the schema goes into the instructions, and the answer is checked after."""
        return (
            f"{system}\nAnswer with one JSON object with every key of this JSON schema and nothing else "
            f"(no prose, no code fence, no tool calls):\n{json.dumps(schema, separators=(',', ':'))}\n"
        )

    def command(
        self, binary: str, model: str | None, system: str, schema: dict[str, Any], workdir: Path
    ) -> list[str]:
        command = [
            binary,
            "--prompt",
            PROMPT_FLAG_TEXT,
            "--output-format",
            "json",
            "--allowed-mcp-server-names",
            NO_MCP_SERVER,
            "--extensions",
            "none",
            "--skip-trust",  # headless stops in an untrusted folder (exit 55); this one is our empty folder
        ]
        return command + (["--model", model] if model else [])

    def env(self, workdir: Path) -> dict[str, str]:
        distill_settings_file(workdir)
        # the workspace settings count only in a trusted folder; the run's folder is ours, and empty
        return {GUARD_ENV: "1", TRUST_ENV: "true"}

    def read(self, run: CliRun) -> AgentAnswer:
        result = _json_object(run.stdout) or _json_object(run.stderr)  # errors come on stderr (observed)
        if result is None:
            detail = first_line(run.stderr) or first_line(run.stdout) or "no output"
            self.fail(detail)
            raise DistillError(f"gemini exited with code {run.returncode} without a JSON result: {detail}")
        error = result.get("error")
        if isinstance(error, dict) or run.returncode != 0 or not isinstance(result.get("response"), str):
            error = error if isinstance(error, dict) else {}
            detail = first_line(str(error.get("message") or "")) or first_line(run.stderr) or "no response"
            if error.get("code") == AUTH_EXIT or run.returncode == AUTH_EXIT:
                raise ConfigError(f"{self.label} is not logged in: {self.login_fix} ({detail})")
            self.fail(detail)
            raise DistillError(f"gemini failed (exit {run.returncode}): {detail}")
        stats = result.get("stats")
        models = stats.get("models") if isinstance(stats, dict) else None
        models = models if isinstance(models, dict) else {}
        usage = DistillUsage(input_tokens=0, output_tokens=0)
        for metrics in models.values():
            tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
            if isinstance(tokens, dict):
                usage.input_tokens = (usage.input_tokens or 0) + int(tokens.get("prompt") or 0)
                usage.output_tokens = (
                    (usage.output_tokens or 0)
                    + int(tokens.get("candidates") or 0)
                    + int(tokens.get("thoughts") or 0)
                )
        return AgentAnswer(result["response"], usage, [m for m in models if isinstance(m, str)])

    def login(self, binary: str, runner: Runner, workdir: Path) -> tuple[bool | None, str]:
        """As Gemini CLI decides before any request (validateNonInteractiveAuth, 0.61): the auth type in
        the user's settings, else one from the environment; then its credentials, read locally."""
        env = os.environ
        home = gemini_dir()
        security = _read_json(home / "settings.json").get("security")
        auth = security.get("auth") if isinstance(security, dict) else None
        selected = auth.get("selectedType") if isinstance(auth, dict) else None
        if not selected:
            if env.get("GOOGLE_GENAI_USE_GCA") == "true":
                selected = "oauth-personal"
            elif env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
                selected = "vertex-ai"
            elif env.get("GOOGLE_GEMINI_BASE_URL"):
                selected = (
                    "gateway"  # not valid headless (validateAuthMethod: "Invalid auth method selected")
                )
            elif env.get("GEMINI_API_KEY"):
                selected = "gemini-api-key"
            elif env.get("CLOUD_SHELL") == "true" or env.get("GEMINI_CLI_USE_COMPUTE_ADC") == "true":
                selected = "compute-default-credentials"
        if not selected:
            return False, f"not logged in (no sign-in method in {home / 'settings.json'} nor GEMINI_API_KEY)"
        if selected == "oauth-personal":
            if (home / "oauth_creds.json").is_file():
                return True, "logged in (Login with Google)"
            return False, "not logged in (Login with Google chosen, but no saved credentials: run `gemini`)"
        if selected == "gemini-api-key":
            if env.get("GEMINI_API_KEY") or any(
                _dotenv_has(p, "GEMINI_API_KEY") for p in (home / ".env", home.parent / ".env")
            ):
                return True, "logged in (GEMINI_API_KEY)"
            return None, "its login is unknown: an API key was chosen; it may be in the system keychain"
        if selected == "gateway":
            return None, "its login is unknown: GOOGLE_GEMINI_BASE_URL is set without a sign-in method"
        return True, f"logged in ({selected})"


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    start = text.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
