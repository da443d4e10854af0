"""The hooks `setup codex|gemini` registers: one per moment, each in the CLI's own hooks file, each with its switch.

| moment | Codex CLI 0.171 (`$CODEX_HOME/hooks.json`) | Gemini CLI 0.61 (`~/.gemini/settings.json`) | off |
|---|---|---|---|
| before the model reads a prompt | `UserPromptSubmit` | `BeforeAgent` | `hook_prompt = false` |
| a shell command failed | `PostToolUse` of Bash | `AfterTool` of run_shell_command | `hook_failure = false` |
| the session ended | `Stop` (turn end; distilled once quiet) | `SessionEnd` | `hook_session_end = false` |

Both CLIs send the same fields as Claude Code (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, the
prompt for the first) and take `hookSpecificOutput.additionalContext` (read off Codex's output schema and Gemini
CLI's bundle; checked with the real CLIs in tests/functional/test_agent_moments_cli.py). A switched-off moment
is removed by the next `setup … --write`; everything else in the file is kept. Codex runs a hook only once it is
trusted: --write trusts episodic's through `codex app-server` (codex_hook_trust).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.cli.setup_clients import (
    FAILURE_ARGS,
    HOOK_ARGS,
    HOOK_TIMEOUT_SECONDS,
    SERVER_NAME,
    SESSION_DISTILL_ARGS,
    MergeResult,
    load_json_object,
    remove_hook,
    set_hook,
    write_if_changed,
)
from episodic.kernel.errors import ConfigError

GEMINI_TIMEOUT_MS = HOOK_TIMEOUT_SECONDS * 1000  # Gemini CLI's hook timeout is in milliseconds


@dataclass(frozen=True)
class Moment:
    name: str  # what setup and doctor call it
    event: str
    matcher: str
    args: str  # the `episodic …` subcommand it runs
    switch: str  # the setting that turns it off
    gemini_name: str = ""  # Gemini CLI names each hook (`/hooks disable NAME`)


CODEX_MOMENTS = (
    Moment("prompt hook", "UserPromptSubmit", "", HOOK_ARGS, "hook_prompt"),
    Moment("failure hook", "PostToolUse", "Bash", FAILURE_ARGS, "hook_failure"),  # every Bash call
    Moment("session-end hook", "Stop", "", SESSION_DISTILL_ARGS, "hook_session_end"),  # every turn's end
)
GEMINI_MOMENTS = (
    Moment("prompt hook", "BeforeAgent", "", HOOK_ARGS, "hook_prompt", "episodic-prompt"),
    Moment(
        "failure hook", "AfterTool", "run_shell_command", FAILURE_ARGS, "hook_failure", "episodic-failure"
    ),
    Moment(
        "session-end hook", "SessionEnd", "", SESSION_DISTILL_ARGS, "hook_session_end", "episodic-session-end"
    ),
)
CODEX_TRUST_NOTE = (
    "Codex runs a new or changed hook only once it is trusted (else it is skipped silently): --write trusts "
    "the episodic ones through `codex app-server`, as /hooks in codex would."
)


def moments(agent: str) -> tuple[Moment, ...]:
    return CODEX_MOMENTS if agent == "codex" else GEMINI_MOMENTS


def hooks_file(agent: str, agent_home: Path) -> Path:
    """Codex: `$CODEX_HOME/hooks.json`; Gemini CLI: `$GEMINI_CLI_HOME/.gemini/settings.json`."""
    return agent_home / "hooks.json" if agent == "codex" else agent_home / ".gemini" / "settings.json"


def moment(agent: str, switch: str) -> Moment:
    (found,) = [m for m in moments(agent) if m.switch == switch]
    return found


def _handler(moment: Moment, command: str) -> dict[str, Any] | None:
    if not moment.gemini_name:
        return None  # Codex: Claude Code's handler shape (timeout in seconds)
    return {"name": moment.gemini_name, "type": "command", "command": command, "timeout": GEMINI_TIMEOUT_MS}


def merge_agent_hooks(
    path: Path, wanted: list[tuple[Moment, str | None]], server_entry: dict[str, Any] | None = None
) -> MergeResult:
    """Each moment's episodic hook in a JSON hooks file set to its command, or removed when it is None, and
    the MCP server entry when the same file holds it (Gemini CLI's settings.json); one write, one backup (of
    the file as it was); everything else in the file is kept."""
    data = load_json_object(path)
    before = json.dumps(data, sort_keys=True) if path.exists() else ""
    if server_entry is not None:
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ConfigError(f'{path}: "mcpServers" is not an object; nothing was changed')
        servers[SERVER_NAME] = server_entry
    for each, command in wanted:
        if command:
            set_hook(data, path, command, each.event, each.args, each.matcher, _handler(each, command))
        else:
            remove_hook(data, each.event, each.args)
    if not path.exists() and not data:
        return MergeResult(path, changed=False)
    return write_if_changed(path, data, before)


def plan_lines(path: Path, wanted: list[tuple[Moment, str | None]]) -> list[str]:
    """What the plan (no --write) says about each hook."""
    lines = []
    for each, command in wanted:
        if not command:
            lines.append(
                f"# The {each.name} is switched off ({each.switch} = false): --write removes it from {path}."
            )
        else:
            matcher = f", matcher {each.matcher!r}" if each.matcher else ""
            lines.append(f"# The {each.name}, in {path}: hooks.{each.event}{matcher}, command {command!r}.")
    return lines


def hooks_step(
    agent: str,
    agent_home: Path,
    executable: str,
    on: dict[str, bool],
    write: bool,
    codex_binary: str = "codex",
    server_entry: dict[str, Any] | None = None,
) -> list[str]:
    """`setup codex|gemini`: the hooks of the moments in `on` (switch name -> on) planned (no --write) or merged
    (and, for Codex, trusted through its app-server: an untrusted hook never runs); the lines to print."""
    from episodic.cli.codex_hook_trust import trust_episodic_hooks

    wanted = [
        (each, f"{shlex.quote(executable)} {each.args}" if on[each.switch] else None)
        for each in moments(agent)
        if each.switch in on
    ]
    path = hooks_file(agent, agent_home)
    trusting = agent == "codex" and any(command for _, command in wanted)
    if not write:
        return plan_lines(path, wanted) + ([f"# {CODEX_TRUST_NOTE}"] if trusting else [])
    result = merge_agent_hooks(path, wanted, server_entry)
    backup = f" (backup: {result.backup})" if result.backup else ""
    what = ", ".join(
        [f"MCP server {SERVER_NAME!r}"] * (server_entry is not None)
        + [
            each.name if command else f"{each.name} removed ({each.switch} = false)"
            for each, command in wanted
        ]
    )
    done = f"updated {result.path}{backup}: {what}" if result.changed else f"unchanged {result.path} ({what})"
    if trusting:
        return [done, trust_episodic_hooks(codex_binary, agent_home, path).line]
    return [done]
