"""`episodic setup codex|gemini`: the MCP server entry in each CLI's own config format.

Formats as the CLIs write them (checked with npm @openai/codex 0.171 `codex mcp add` / `codex mcp list`
and @google/gemini-cli 0.61 `gemini mcp add --scope user` / `gemini mcp list`):
- Codex: `$CODEX_HOME/config.toml`, a `[mcp_servers.<name>]` table: `command` + `args` (stdio) or
  `url` + `bearer_token_env_var` (streamable HTTP).
- Gemini CLI: `$GEMINI_CLI_HOME/.gemini/settings.json`, `mcpServers.<name>`: `command` + `args`, or
  `url` + `type: "http"` + `headers` (`${VAR}` is expanded from the environment).
Both get the prompt, failure and session-end hooks (episodic.cli.agent_hooks): Codex's in `$CODEX_HOME/hooks.json`
(trusted through `codex app-server`: codex_hook_trust), Gemini CLI's in its settings.json (timeouts in
milliseconds, each named).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.cli.agent_hooks import (
    CODEX_MOMENTS,
    CODEX_TRUST_NOTE,  # noqa: F401  (setup's note, imported from here)
    GEMINI_MOMENTS,
    hooks_file,
    hooks_step,
    merge_agent_hooks,
)
from episodic.cli.setup_clients import SERVER_NAME, TOKEN_ENV, ClientPlan, MergeResult
from episodic.kernel.errors import ConfigError

_TABLE = f"mcp_servers.{SERVER_NAME}"
TABLE_RE = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*\"?" + re.escape(SERVER_NAME) + r"\"?\s*\]\s*$", re.M)


def codex_home(codex_home_setting: str | None, user_home: Path) -> Path:
    return Path(codex_home_setting).expanduser() if codex_home_setting else user_home / ".codex"


def gemini_home(gemini_home_setting: str | None, user_home: Path) -> Path:
    return Path(gemini_home_setting).expanduser() if gemini_home_setting else user_home


def gemini_plan(
    home: Path, url: str | None = None, token: str | None = None, executable: str = "episodic"
) -> ClientPlan:
    """User scope `~/.gemini/settings.json` mcpServers (merged like Claude Code's JSON files)."""
    header = f"Bearer {token}" if token else "Bearer ${" + TOKEN_ENV + "}"
    if url:
        entry: dict[str, Any] = {"url": url, "type": "http", "headers": {"Authorization": header}}
        command = (
            f"gemini mcp add --scope user --transport http {SERVER_NAME} {shlex.quote(url)} "
            f"-H {shlex.quote('Authorization: ' + header)}"
        )
    else:
        entry = {"command": executable, "args": ["mcp"]}
        command = f"gemini mcp add --scope user {SERVER_NAME} {shlex.quote(executable)} mcp"
    notes = [
        "Gemini CLI loads MCP servers only in trusted folders: until you trust a project folder, "
        f"`gemini mcp list` shows {SERVER_NAME} as Disabled there. Run `gemini` once in the folder and choose "
        '"Trust folder" (or "Trust parent folder" for every project under it); the choice is kept in '
        "~/.gemini/trustedFolders.json.",
    ]
    if url and not token:
        notes.insert(
            0, f"Export {TOKEN_ENV} (a token from `episodic token add --tenant NAME`) before starting gemini."
        )
    return ClientPlan(
        client="gemini",
        commands=[command],
        server_file=home / ".gemini" / "settings.json",
        server_entry=entry,
        notes=notes,
    )


@dataclass
class CodexPlan:
    command: str
    config_file: Path
    table: str  # the TOML table text, as `codex mcp add` writes it
    notes: list[str]


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a TOML basic string is a JSON string


def codex_plan(
    home: Path, url: str | None = None, token: str | None = None, executable: str = "episodic"
) -> CodexPlan:
    """`codex mcp add …` and the `[mcp_servers.episodic]` table of `$CODEX_HOME/config.toml`."""
    entry: dict[str, Any]
    if url and token:
        entry = {"url": url, "http_headers": {"Authorization": f"Bearer {token}"}}
        command = f"codex mcp add {SERVER_NAME} --url {shlex.quote(url)}  # then add http_headers (below)"
    elif url:
        entry = {"url": url, "bearer_token_env_var": TOKEN_ENV}
        command = f"codex mcp add {SERVER_NAME} --url {shlex.quote(url)} --bearer-token-env-var {TOKEN_ENV}"
    else:
        entry = {"command": executable, "args": ["mcp"]}
        command = f"codex mcp add {SERVER_NAME} -- {shlex.quote(executable)} mcp"
    table = f"[{_TABLE}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())
    notes: list[str] = []
    if url and not token:
        notes.insert(
            0, f"Export {TOKEN_ENV} (a token from `episodic token add --tenant NAME`) before starting codex."
        )
    return CodexPlan(command=command, config_file=home / "config.toml", table=table, notes=notes)


def render_codex_plan(plan: CodexPlan) -> str:
    out = [
        "# Register the MCP server:",
        plan.command,
        f"# (or add this to {plan.config_file}:)",
        plan.table.rstrip(),
    ]
    out.extend(f"# {note}" for note in plan.notes)
    return "\n".join(out)


def apply_codex_plan(plan: CodexPlan) -> MergeResult:
    """Append the table unless an `[mcp_servers.episodic]` table is there (then nothing changes)."""
    path = plan.config_file
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = ""
    try:
        tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it or add the table by hand") from exc
    if TABLE_RE.search(raw):
        return MergeResult(path, changed=False)
    backup: Path | None = None
    if path.exists():
        backup = path.with_name(f"{path.name}.bak-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = raw + ("\n" if raw and not raw.endswith("\n") else "") + ("\n" if raw.strip() else "") + plan.table
    tomllib.loads(text)  # never write a file codex could not read
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return MergeResult(path, changed=True, backup=backup)


# ---------------------------------------------------------------- the failure hook of Codex and Gemini CLI
# (the prompt, failure and session-end hooks together: episodic.cli.agent_hooks)

CODEX_FAILURE = (CODEX_MOMENTS[1].event, CODEX_MOMENTS[1].matcher)  # every Bash call; the hook reads the exit
GEMINI_FAILURE = (GEMINI_MOMENTS[1].event, GEMINI_MOMENTS[1].matcher)  # every shell call; "Exit Code: N"
GEMINI_HOOK_NAME = GEMINI_MOMENTS[1].gemini_name  # `/hooks disable episodic-failure` in Gemini CLI names it


def codex_hooks_file(home: Path) -> Path:
    return hooks_file("codex", home)


def merge_failure_hook(
    path: Path, command: str | None, event: str, matcher: str, gemini: bool
) -> MergeResult:
    """The episodic failure hook alone in a JSON hooks file: set to `command`, or removed when it is None."""
    each = GEMINI_MOMENTS[1] if gemini else CODEX_MOMENTS[1]
    return merge_agent_hooks(path, [(each, command)])


def failure_hook_step(
    agent: str, agent_home: Path, executable: str, on: bool, write: bool, codex_binary: str = "codex"
) -> list[str]:
    """`hooks_step` for the failure hook alone."""
    return hooks_step(agent, agent_home, executable, {"hook_failure": on}, write, codex_binary)
