"""`episodic doctor`: the failure hook of Codex CLI and Gemini CLI, for each CLI `setup` was run for (its MCP
entry or our hook is in its files); (name, status, detail, fix) rows that doctor turns into checks.

Codex 0.171 runs a user hook only once it is trusted: `hooks.state."<hooks.json>:post_tool_use:<group>:<handler>"`
in `$CODEX_HOME/config.toml` holds the trusted hash (the key as `codex app-server` `hooks/list` names it). Doctor
reads that a trust entry exists; whether its hash still matches the hook is Codex's to say (`/hooks`).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from episodic.cli.setup_agents import (
    _TABLE_RE,
    CODEX_FAILURE,
    GEMINI_FAILURE,
    GEMINI_HOOK_NAME,
    codex_home,
    codex_hooks_file,
    gemini_home,
)
from episodic.cli.setup_clients import FAILURE_ARGS, SERVER_NAME, user_home
from episodic.settings import Settings

Row = tuple[str, str, str, str]  # name, status (ok | warn | fail), detail, fix


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _toml(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        raw = path.read_text(encoding="utf-8")
        return raw, tomllib.loads(raw)
    except (OSError, tomllib.TOMLDecodeError):
        return "", {}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _ours(data: dict[str, Any], event: str, matcher: str) -> tuple[int, int, str] | None:
    """(group index, handler index, command) of episodic's failure hook under `event` with `matcher`."""
    groups = _table(data, "hooks").get(event)
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, dict) or group.get("matcher", "") != matcher:
            continue
        for h, handler in enumerate(group.get("hooks") or []):
            command = str(handler.get("command", "")) if isinstance(handler, dict) else ""
            if command.rstrip().endswith(FAILURE_ARGS) and "episodic" in command:
                return g, h, command
    return None


def _common(settings: Settings, name: str, set_up: bool, found: Any, where: Path, fix: str) -> Row | None:
    """The rows every CLI shares: not set up (no row), switched off, missing, failure memory off."""
    if not set_up and found is None:
        return None
    if not settings.hook_failure:
        return (name, "ok", "switched off (hook_failure = false / EPISODIC_HOOK_FAILURE=false)", "")
    if found is None:
        return (name, "warn", f"no episodic failure hook in {where}", fix)
    if not settings.failure_memory:
        return (name, "warn", "the hook runs, but failure_memory is off: it finds nothing",
                "set failure_memory = true (then `episodic index`)")  # fmt: skip
    return None


def codex_row(settings: Settings) -> Row | None:
    home = codex_home(settings.codex_home, user_home(settings.user_home))
    raw, config = _toml(home / "config.toml")
    hooks_file = codex_hooks_file(home)
    event, matcher = CODEX_FAILURE
    found = _ours(_json(hooks_file), event, matcher)
    fix = "`episodic setup codex --write` (it registers and trusts the hook)"
    row = _common(settings, "failure hook (codex)", bool(_TABLE_RE.search(raw)), found, hooks_file, fix)
    if row is not None or found is None:
        return row
    features = _table(config, "features")
    if features.get("hooks") is False or features.get("codex_hooks") is False:
        return ("failure hook (codex)", "warn", f"Codex hooks are off ([features] in {home / 'config.toml'})",
                "remove `hooks = false` from [features]")  # fmt: skip
    group, handler, command = found
    key = f"{hooks_file}:post_tool_use:{group}:{handler}"
    entry = _table(_table(_table(config, "hooks"), "state"), key)
    if not entry.get("trusted_hash"):
        return ("failure hook (codex)", "warn", f"{command}: not trusted, so Codex skips it", fix)
    return (
        "failure hook (codex)",
        "ok",
        f"{command} ({event}, matcher {matcher}; a trust entry is recorded)",
        "",
    )


def gemini_row(settings: Settings) -> Row | None:
    path = gemini_home(settings.gemini_cli_home, user_home(settings.user_home)) / ".gemini" / "settings.json"
    data = _json(path)
    event, matcher = GEMINI_FAILURE
    found = _ours(data, event, matcher)
    servers = _table(data, "mcpServers")
    fix = "`episodic setup gemini --write`"
    row = _common(settings, "failure hook (gemini)", SERVER_NAME in servers, found, path, fix)
    if row is not None or found is None:
        return row
    hooks_config = _table(data, "hooksConfig")
    if hooks_config.get("enabled") is False:
        return ("failure hook (gemini)", "warn", f"Gemini CLI hooks are off (hooksConfig.enabled in {path})",
                "set hooksConfig.enabled to true, or `/hooks enable-all` in gemini")  # fmt: skip
    if GEMINI_HOOK_NAME in (hooks_config.get("disabled") or []):
        return ("failure hook (gemini)", "warn", f"{GEMINI_HOOK_NAME} is disabled (hooksConfig.disabled)",
                f"`/hooks enable {GEMINI_HOOK_NAME}` in gemini")  # fmt: skip
    return ("failure hook (gemini)", "ok", f"{found[2]} ({event}, matcher {matcher})", "")


def agent_failure_rows(settings: Settings) -> list[Row]:
    return [row for row in (codex_row(settings), gemini_row(settings)) if row is not None]
