"""`episodic doctor` for Codex CLI and Gemini CLI, for each CLI `setup` was run for (its MCP entry or one of our
hooks is in its files): the MCP entry and each moment's hook (prompt, failure, session end); (name, status,
detail, fix) rows that doctor turns into checks. `agents_set_up` says which agents doctor checks at all.

Codex 0.171 runs a user hook only once it is trusted: `hooks.state."<hooks.json>:<event>:<group>:<handler>"`
in `$CODEX_HOME/config.toml` holds the trusted hash (the key as `codex app-server` `hooks/list` names it). Doctor
reads that a trust entry exists; whether its hash still matches the hook is Codex's to say (`/hooks`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

from episodic.cli.agent_hooks import Moment, hooks_file, moment, moments
from episodic.cli.setup_agents import TABLE_RE, codex_home, gemini_home
from episodic.cli.setup_clients import (
    FAILURE_ARGS,
    FAILURE_EVENT,
    FAILURE_MATCHER,
    HOOK_ARGS,
    SERVER_NAME,
    user_home,
)
from episodic.kernel.settings import Settings

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


def _ours(
    data: dict[str, Any], event: str, matcher: str, args: str = FAILURE_ARGS
) -> tuple[int, int, str] | None:
    """(group index, handler index, command) of episodic's `args` hook under `event` with `matcher`."""
    groups = _table(data, "hooks").get(event)
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, dict) or group.get("matcher", "") != matcher:
            continue
        for h, handler in enumerate(group.get("hooks") or []):
            command = str(handler.get("command", "")) if isinstance(handler, dict) else ""
            if command.rstrip().endswith(args) and "episodic" in command:
                return g, h, command
    return None


def _common(
    settings: Settings, name: str, each: Moment, set_up: bool, found: Any, where: Path, fix: str
) -> Row | None:
    """The rows every CLI shares: not set up (no row), switched off, missing, failure memory off."""
    if not set_up and found is None:
        return None
    if not getattr(settings, each.switch):
        return (
            name,
            "ok",
            f"switched off ({each.switch} = false / EPISODIC_{each.switch.upper()}=false)",
            "",
        )
    if found is None:
        return (name, "warn", f"no episodic {each.name} in {where}", fix)
    if each.switch == "hook_failure" and not settings.failure_memory:
        return (name, "warn", "the hook runs, but failure_memory is off: it finds nothing",
                "set failure_memory = true (then `episodic index`)")  # fmt: skip
    return None


def _codex_trust_fix(settings: Settings) -> str:
    """setup trusts the hooks through `codex app-server`: only when that `codex` can be run from here."""
    if shutil.which(settings.codex_binary):
        return "`episodic setup codex --write` (it registers and trusts the hooks)"
    return (
        f"`{settings.codex_binary}` is not on PATH here: start codex, type /hooks and trust the episodic hooks "
        "(or set `codex_binary` to its path in the episodic config, then `episodic setup codex --write`)"
    )


def codex_moment_row(settings: Settings, each: Moment) -> Row | None:
    home = codex_home(settings.codex_home, user_home(settings.user_home))
    raw, config = _toml(home / "config.toml")
    path = hooks_file("codex", home)
    found = _ours(_json(path), each.event, each.matcher, each.args)
    name, fix = f"{each.name} (codex)", _codex_trust_fix(settings)
    row = _common(settings, name, each, bool(TABLE_RE.search(raw)), found, path, fix)
    if row is not None or found is None:
        return row
    features = _table(config, "features")
    if features.get("hooks") is False or features.get("codex_hooks") is False:
        return (name, "warn", f"Codex hooks are off ([features] in {home / 'config.toml'})",
                "remove `hooks = false` from [features]")  # fmt: skip
    group, handler, command = found
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", each.event).lower()  # PostToolUse -> post_tool_use
    entry = _table(_table(_table(config, "hooks"), "state"), f"{path}:{snake}:{group}:{handler}")
    if not entry.get("trusted_hash"):
        return (name, "warn", f"{command}: not trusted, so Codex skips it", fix)
    matcher = f", matcher {each.matcher}" if each.matcher else ""
    return (name, "ok", f"{command} ({each.event}{matcher}; a trust entry is recorded)", "")


def gemini_moment_row(settings: Settings, each: Moment) -> Row | None:
    path = hooks_file("gemini", gemini_home(settings.gemini_cli_home, user_home(settings.user_home)))
    data = _json(path)
    found = _ours(data, each.event, each.matcher, each.args)
    name = f"{each.name} (gemini)"
    row = _common(settings, name, each, SERVER_NAME in _table(data, "mcpServers"), found, path,
                  "`episodic setup gemini --write`")  # fmt: skip
    if row is not None or found is None:
        return row
    hooks_config = _table(data, "hooksConfig")
    if hooks_config.get("enabled") is False:
        return (name, "warn", f"Gemini CLI hooks are off (hooksConfig.enabled in {path})",
                "set hooksConfig.enabled to true, or `/hooks enable-all` in gemini")  # fmt: skip
    if each.gemini_name in (hooks_config.get("disabled") or []):
        return (name, "warn", f"{each.gemini_name} is disabled (hooksConfig.disabled)",
                f"`/hooks enable {each.gemini_name}` in gemini")  # fmt: skip
    matcher = f", matcher {each.matcher}" if each.matcher else ""
    return (name, "ok", f"{found[2]} ({each.event}{matcher})", "")


def codex_row(settings: Settings) -> Row | None:
    return codex_moment_row(settings, moment("codex", "hook_failure"))


def gemini_row(settings: Settings) -> Row | None:
    return gemini_moment_row(settings, moment("gemini", "hook_failure"))


def agent_failure_rows(settings: Settings) -> list[Row]:
    return [row for row in (codex_row(settings), gemini_row(settings)) if row is not None]


def mcp_row(settings: Settings, agent: str) -> Row:
    """The MCP entry of Codex (`[mcp_servers.episodic]`) or Gemini CLI (`mcpServers.episodic`)."""
    if agent == "codex":
        path = codex_home(settings.codex_home, user_home(settings.user_home)) / "config.toml"
        entry = _table(_table(_toml(path)[1], "mcp_servers"), SERVER_NAME)
    else:
        path = hooks_file("gemini", gemini_home(settings.gemini_cli_home, user_home(settings.user_home)))
        entry = _table(_table(_json(path), "mcpServers"), SERVER_NAME)
    name, fix = f"MCP entry ({agent})", f"`episodic setup {agent} --write`"
    if not entry:
        return (name, "warn", f"no {SERVER_NAME!r} server in {path}: the agent has no search_traces", fix)
    if entry.get("url"):
        return (name, "ok", f"HTTP {entry['url']}", "")
    command = str(entry.get("command", ""))
    runnable = shutil.which(command) if "/" not in command else os.access(command, os.X_OK)
    if not runnable:
        return (name, "fail", f"stdio command {command!r} cannot be run", fix)
    return (name, "ok", f"stdio {command} {' '.join(str(a) for a in entry.get('args') or [])}", "")


def agent_rows(settings: Settings, agent: str) -> list[Row]:
    """Every row of a CLI setup was run for: its MCP entry and each moment's hook."""
    row_of = codex_moment_row if agent == "codex" else gemini_moment_row
    rows = [row_of(settings, each) for each in moments(agent)]
    return [mcp_row(settings, agent), *(row for row in rows if row is not None)]


def agents_set_up(settings: Settings) -> list[str]:
    """The CLIs `setup` was run for (an episodic MCP entry or hook in their files), Claude Code first."""
    home = user_home(settings.user_home)
    claude = _json(home / ".claude" / "settings.json")
    found = []
    if SERVER_NAME in _table(_json(home / ".claude.json"), "mcpServers") or any(
        _ours(claude, event, "", args) or _ours(claude, event, matcher, args)
        for event, matcher, args in (
            ("UserPromptSubmit", "", HOOK_ARGS),
            (FAILURE_EVENT, FAILURE_MATCHER, FAILURE_ARGS),
        )
    ):
        found.append("claude-code")
    for agent, row in (("codex", codex_moment_row), ("gemini", gemini_moment_row)):
        if any(row(settings, each) is not None for each in moments(agent)):
            found.append(agent)
    return found
