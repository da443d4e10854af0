"""`episodic setup claude-code|cursor`: the exact client configuration, printed or merged into the files.

Merging keeps a timestamped backup, never drops the user's other entries, and is idempotent.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.cli.remember import REMEMBER_COMMAND, remember_command_path
from episodic.kernel.errors import ConfigError
from episodic.mcp import SERVER_NAME

HOOK_ARGS = "hook user-prompt-submit"
SESSION_DISTILL_ARGS = "hook session-distill"  # SessionEnd, when Claude Code is the saved distiller
SESSION_START_ARGS = "hook session-start"  # SessionStart, when the dream's synthesis is to be injected
FAILURE_ARGS = "hook post-tool-failure"  # PostToolUseFailure of Bash: the fix of an earlier session
# what an episodic hook entry runs, whatever the agent (setup and the Codex trust step recognise ours by it)
EPISODIC_HOOK_ARGS = (HOOK_ARGS, FAILURE_ARGS, SESSION_DISTILL_ARGS)
FAILURE_EVENT, FAILURE_MATCHER = "PostToolUseFailure", "Bash"  # a failed shell command (non-zero exit)
HOOK_TIMEOUT_SECONDS = 5  # the hook keeps its own 1.5 s budget; this is Claude Code's hard stop
TOKEN_ENV = "EPISODIC_TOKEN"


@dataclass
class PlannedFile:
    """A whole file setup writes when missing (e.g. a slash command); never overwritten."""

    path: Path
    content: str


@dataclass
class ClientPlan:
    client: str
    commands: list[str]  # shell commands to run instead of --write
    server_file: Path  # where --write merges the server entry
    server_entry: dict[str, Any]
    hook_file: Path | None = None
    hook_command: str | None = None
    session_end_command: str | None = None
    session_start_command: str | None = None
    failure_command: str | None = None  # the PostToolUseFailure hook (None: switched off, removed)
    files: list[PlannedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class MergeResult:
    path: Path
    changed: bool
    backup: Path | None = None


# ---------------------------------------------------------------- plans


def remember_command_file(home: Path) -> PlannedFile:
    """What `setup claude-code` writes for `/remember` (only when missing: the user's edits are kept)."""
    return PlannedFile(path=remember_command_path(home), content=REMEMBER_COMMAND)


def user_home(settings_home: str | None) -> Path:
    return Path(settings_home).expanduser() if settings_home else Path.home()


def installed_executable(argv0: str | None = None, python: str | None = None) -> str:
    """The absolute path of the installed `episodic` console script (clients must not rely on PATH)."""
    candidates = [Path(argv0 if argv0 is not None else sys.argv[0])]
    candidates.append(Path(python or sys.executable).parent / "episodic")  # the venv's bin folder
    found = shutil.which("episodic")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.name == "episodic" and candidate.is_file() and os.access(candidate, os.X_OK):
            if candidate.is_symlink():  # e.g. the ~/.local/bin link `setup path` made: name the venv's own
                return os.path.realpath(candidate)
            return str(candidate.absolute())  # absolute, not resolved: keep the venv's own bin path
    raise ConfigError(
        "cannot find the installed `episodic` executable; run setup through it, e.g. `.venv/bin/episodic setup …`"
    )


def hook_command(executable: str) -> str:
    return f"{shlex.quote(executable)} {HOOK_ARGS}"


def _header(token: str | None, literal: bool, reference: str) -> str:
    """An environment reference unless a literal token was asked for (`claude mcp get` prints headers)."""
    return f"Bearer {token}" if token and literal else f"Bearer {reference}"


def _token_notes(url: str | None, token: str | None, literal: bool) -> list[str]:
    if not url or (token and literal):
        return []
    given = "the token you passed with --token" if token else "a token from `episodic token add`"
    return [
        f"The server entry reads ${{{TOKEN_ENV}}} from the environment: `export {TOKEN_ENV}=<{given}>` in "
        "the shell profile Claude Code/Cursor start from (--literal-token writes it into the file instead)."
    ]


def _hook_entry(command: str, matcher: str = "") -> dict[str, Any]:
    entry = {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}]}
    return {"matcher": matcher, **entry} if matcher else entry


def hook_settings_snippet(
    command: str,
    session_end_command: str | None = None,
    session_start_command: str | None = None,
    failure_command: str | None = None,
) -> dict[str, Any]:
    hooks = {"UserPromptSubmit": [_hook_entry(command)]}
    if failure_command:
        hooks[FAILURE_EVENT] = [_hook_entry(failure_command, FAILURE_MATCHER)]
    if session_end_command:
        hooks["SessionEnd"] = [_hook_entry(session_end_command)]
    if session_start_command:
        hooks["SessionStart"] = [_hook_entry(session_start_command)]
    return {"hooks": hooks}


def claude_code_plan(
    home: Path,
    url: str | None = None,
    token: str | None = None,
    executable: str = "episodic",
    literal_token: bool = False,
    distil_on_session_end: bool = False,
    dream_on_session_start: bool = False,
    failure_hook: bool = True,
) -> ClientPlan:
    """HTTP (with --url) or local stdio; user scope (`~/.claude.json` mcpServers), the prompt hook, `/remember`;
    the PostToolUseFailure hook of Bash (unless `hook_failure` is off);
    with Claude Code as the distiller, a SessionEnd hook that distils the ended session in the background;
    with `dream_session_start`, a SessionStart hook that injects the latest dream synthesis."""
    if url:
        header_value = _header(token, literal_token, "${" + TOKEN_ENV + "}")
        # single quotes: the shell must not expand the reference, Claude Code does when it connects
        command = (
            f"claude mcp add --transport http --scope user {SERVER_NAME} {shlex.quote(url)} "
            f"--header {shlex.quote('Authorization: ' + header_value)}"
        )
        entry: dict[str, Any] = {"type": "http", "url": url, "headers": {"Authorization": header_value}}
    else:
        command = f"claude mcp add --scope user {SERVER_NAME} -- {shlex.quote(executable)} mcp"
        entry = {"type": "stdio", "command": executable, "args": ["mcp"]}
    notes = [
        f"Entries name {executable} by its absolute path: if that virtualenv moves or is rebuilt elsewhere, "
        "re-run `setup claude-code --write` from the new one (`episodic doctor` reports a stale path).",
        "The prompt hook asks the local HTTP server (`episodic serve`: `setup --write` starts it and waits "
        "until it answers; later, the hook starts one in the background whenever none answers) with the "
        "`token` that `setup --write` keeps in the episodic config file.",
        *_token_notes(url, token, literal_token),
    ]
    notes.append(
        "`/remember` in a Claude Code session asks the agent to save its own card with record_episode; "
        "over HTTP that needs a write token (`episodic token add --tenant NAME --scope write`)."
    )
    return ClientPlan(
        client="claude-code",
        commands=[command],
        server_file=home / ".claude.json",
        server_entry=entry,
        hook_file=home / ".claude" / "settings.json",
        hook_command=hook_command(executable),
        session_end_command=(
            f"{shlex.quote(executable)} {SESSION_DISTILL_ARGS}" if distil_on_session_end else None
        ),
        session_start_command=(
            f"{shlex.quote(executable)} {SESSION_START_ARGS}" if dream_on_session_start else None
        ),
        failure_command=f"{shlex.quote(executable)} {FAILURE_ARGS}" if failure_hook else None,
        files=[remember_command_file(home)],
        notes=notes,
    )


def cursor_plan(
    home: Path,
    url: str | None = None,
    token: str | None = None,
    executable: str = "episodic",
    literal_token: bool = False,
) -> ClientPlan:
    """`~/.cursor/mcp.json` (no `type`; `${env:NAME}` interpolation). Cursor hooks cannot inject context."""
    if url:
        header_value = _header(token, literal_token, "${env:" + TOKEN_ENV + "}")
        entry: dict[str, Any] = {"url": url, "headers": {"Authorization": header_value}}
    else:
        entry = {"command": executable, "args": ["mcp"]}
    notes = [
        *_token_notes(url, token, literal_token),
        "Reload Cursor after editing; it reads env vars from the process that launched it.",
        "No prompt hook for Cursor: its beforeSubmitPrompt hook cannot add context; the agent calls search_traces.",
    ]
    return ClientPlan(
        client="cursor",
        commands=[],
        server_file=home / ".cursor" / "mcp.json",
        server_entry=entry,
        notes=notes,
    )


WRITE_AGAIN = "# Run again with --write to merge these into the files (a backup is kept)."


def render_plan(plan: ClientPlan, last: bool = True) -> str:
    """What `setup` prints without --write: the commands and the exact JSON to paste (`last`: then how to
    write them; a preview with more to show after it ends on that line itself)."""
    out: list[str] = []
    if plan.commands:
        out.append("# Register the MCP server:")
        out.extend(plan.commands)
        out.append(f'# (or add this under "mcpServers" in {plan.server_file}:)')
    else:
        out.append(f"# Add this to {plan.server_file}:")
    out.append(json.dumps({"mcpServers": {SERVER_NAME: plan.server_entry}}, indent=2))
    if plan.hook_file and plan.hook_command:
        snippet = hook_settings_snippet(
            plan.hook_command, plan.session_end_command, plan.session_start_command, plan.failure_command
        )
        out.append(f"# Hooks ({', '.join(snippet['hooks'])}): merge this into {plan.hook_file}:")
        out.append(json.dumps(snippet, indent=2))
    for planned in plan.files:
        out.append(f"# Write {planned.path}:")
        out.append(planned.content)
    out.extend(f"# {note}" for note in plan.notes)
    out += [WRITE_AGAIN] if last else []
    return "\n".join(out)


# ---------------------------------------------------------------- merging


def load_json_object(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); fix it or merge by hand — nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def write_with_backup(path: Path, data: dict[str, Any]) -> Path | None:
    backup: Path | None = None
    if path.exists():
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return backup


def _is_our_hook(hook: Any, args: str = HOOK_ARGS) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return isinstance(command, str) and command.rstrip().endswith(args) and "episodic" in command


def _hook_groups(data: dict[str, Any], path: Path, event: str) -> list[Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f'{path}: "hooks" is not an object; nothing was changed')
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise ConfigError(f'{path}: "hooks.{event}" is not a list; nothing was changed')
    return groups


def set_hook(
    data: dict[str, Any],
    path: Path,
    command: str,
    event: str,
    args: str,
    matcher: str = "",
    handler: dict[str, Any] | None = None,
) -> None:
    """One episodic `event` hook running `command` in `data`: an older one is updated, duplicates dropped
    (with a `matcher`, ours is kept only in a group of that matcher). `handler`: the whole one, when the
    client's differs from Claude Code's (Gemini CLI's timeout is in milliseconds)."""
    groups = _hook_groups(data, path, event)
    wanted = handler or _hook_entry(command)["hooks"][0]
    kept_ours = False
    emptied: list[int] = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        updated: list[Any] = []
        for hook in group["hooks"]:
            if not _is_our_hook(hook, args):
                updated.append(hook)
            elif (
                not kept_ours and group.get("matcher", "") == matcher
            ):  # the first of ours is brought up to date, any later one is a duplicate
                updated.append({**hook, **wanted})
                kept_ours = True
        if group["hooks"] and not updated:
            emptied.append(id(group))
        group["hooks"] = updated
    groups[:] = [g for g in groups if id(g) not in emptied]
    if not kept_ours:
        groups.append({"matcher": matcher, "hooks": [wanted]} if matcher else {"hooks": [wanted]})


def remove_hook(data: dict[str, Any], event: str, args: str) -> None:
    """Drop episodic `event` hooks ending in `args` from `data`; an event left with no group goes too
    (an empty list, e.g. `"SessionEnd": []` an older setup left, is no configuration)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(event), list):
        return
    groups = hooks[event]
    kept: list[Any] = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            kept.append(group)
            continue
        remaining = [h for h in entries if not _is_our_hook(h, args)]
        if remaining or not entries:
            kept.append({**group, "hooks": remaining})
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
        if not hooks:
            del data["hooks"]


def write_if_changed(path: Path, data: dict[str, Any], before: str) -> MergeResult:
    if json.dumps(data, sort_keys=True) == before:
        return MergeResult(path, changed=False)
    return MergeResult(path, changed=True, backup=write_with_backup(path, data))


def merge_hook(
    path: Path, command: str, event: str = "UserPromptSubmit", args: str = HOOK_ARGS
) -> MergeResult:
    """One episodic `event` hook running `command`: an older one is updated, duplicates dropped."""
    data = load_json_object(path)
    before = json.dumps(data, sort_keys=True)
    set_hook(data, path, command, event, args)
    return write_if_changed(path, data, before)


def merge_server(path: Path, entry: dict[str, Any], name: str = SERVER_NAME) -> MergeResult:
    """Set mcpServers[name] (replacing only our own entry when it differs), keeping everything else."""
    data = load_json_object(path)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: "mcpServers" is not an object; nothing was changed')
    if servers.get(name) == entry:
        return MergeResult(path, changed=False)
    servers[name] = entry
    return MergeResult(path, changed=True, backup=write_with_backup(path, data))


def write_missing_file(planned: PlannedFile) -> MergeResult:
    if planned.path.exists():
        return MergeResult(planned.path, changed=False)
    planned.path.parent.mkdir(parents=True, exist_ok=True)
    planned.path.write_text(planned.content, encoding="utf-8")
    return MergeResult(planned.path, changed=True)


def merge_hooks(plan: ClientPlan) -> MergeResult | None:
    """Every hook of the plan into its settings file at once: one write, one backup, one line of output."""
    if not (plan.hook_file and plan.hook_command):
        return None
    path = plan.hook_file
    data = load_json_object(path)
    before = json.dumps(data, sort_keys=True) if path.exists() else ""
    set_hook(data, path, plan.hook_command, "UserPromptSubmit", HOOK_ARGS)
    for event, args, command, matcher in (
        ("SessionEnd", SESSION_DISTILL_ARGS, plan.session_end_command, ""),
        ("SessionStart", SESSION_START_ARGS, plan.session_start_command, ""),
        (FAILURE_EVENT, FAILURE_ARGS, plan.failure_command, FAILURE_MATCHER),
    ):
        if command:
            set_hook(data, path, command, event, args, matcher)
        else:
            remove_hook(data, event, args)
    return write_if_changed(path, data, before)


def apply_plan(plan: ClientPlan) -> list[MergeResult]:
    """One result per file, in the order: server entry, hooks, whole files."""
    results = [merge_server(plan.server_file, plan.server_entry)]
    hooks = merge_hooks(plan)
    if hooks is not None:
        results.append(hooks)
    results.extend(write_missing_file(f) for f in plan.files)
    return results


# ---------------------------------------------------------------- the command on PATH


def path_link(home: Path) -> Path:
    """Where `setup path` links the command: ~/.local/bin (on PATH in most login shells)."""
    return home / ".local" / "bin" / "episodic"


def link_executable(executable: str, link: Path) -> MergeResult:
    """A symlink `link` -> the installed executable; an older link (another venv) is replaced, a file is not."""
    if link.is_symlink():
        if os.readlink(link) == executable:
            return MergeResult(link, changed=False)
        link.unlink()
    elif link.exists():
        raise ConfigError(
            f"{link} exists and is not a link; nothing was changed (remove it, or call {executable} directly)"
        )
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(executable)
    return MergeResult(link, changed=True)
