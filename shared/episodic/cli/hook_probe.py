"""Run the prompt hook as an agent CLI runs it: the UserPromptSubmit command in ~/.claude/settings.json (Codex:
$CODEX_HOME/hooks.json; Gemini CLI: BeforeAgent in ~/.gemini/settings.json), a hook payload on stdin, the
configured server behind it; then read what the hook logged.

`doctor` reports that line with its fix; `setup claude-code --write` ends with it and exits non-zero when
the hook cannot be made to answer. The prompt is a card's own problem, so a working chain injects it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.cli.setup_clients import HOOK_ARGS
from episodic.kernel.settings import Settings
from episodic.plumbing import envsource
from episodic.plumbing.hook_choice import PROBE_SESSION

FALLBACK_PROMPT = "episodic doctor probe: the lint step passes here but fails on CI, why is that?"
RUN_MARGIN_SECONDS = 20.0  # interpreter start-up on a loaded machine, beyond the hook's own budget
SETUP = "`episodic setup claude-code --write`"

# (how the logged outcome starts, status, the fix): the first that matches, rules as data
OUTCOMES: tuple[tuple[str, str, str], ...] = (
    ("ok: injected", "ok", ""),
    ("ok: holdout", "ok", ""),
    ("ok: no approved card", "warn", "approve cards in `episodic ui` (review_required is on)"),
    (
        "ok: no confident",
        "warn",
        "a prompt taken from one of your cards found nothing: `episodic search` it to see why",
    ),
    ("skip: missing config", "fail", SETUP + " (keeps a read token for the hook)"),
    ("skip: switched off", "ok", ""),  # hook_prompt = false: the user's choice
    ("skip: ", "warn", "the scope rules exclude this folder (see the scope line)"),
    ("fail: config file", "fail", "fix the line it names"),
    (
        "fail: another",
        "fail",
        "the line says what was done: when it moved the server, the next prompt asks the new port "
        "(run `episodic doctor` again); else stop that program or set another `port` in the config",
    ),
    ("fail: server answered HTTP 401", "fail", SETUP + " (the server refused the hook's token)"),
    (
        "fail: no server answered",
        "warn",
        "nothing was serving; the hook started `episodic serve`: run `episodic doctor` again in a moment",
    ),
    (
        "fail: server timed out",
        "fail",
        "a timeout, not a miss: raise `hook_budget_seconds` in the config, or see logs/serve.log",
    ),
    (
        "fail: timed out",
        "fail",
        "a timeout, not a miss: raise `hook_budget_seconds` in the config, or see logs/serve.log",
    ),
    ("fail: ", "fail", "see logs/hook.log and logs/serve.log in the episodic home"),
)


@dataclass(frozen=True)
class HookProbe:
    status: str  # ok | warn | fail
    detail: str  # what the hook logged (or why it did not run)
    fix: str = ""


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def prompt_hook_source(settings: Settings, user_home: Path, agent: str = "claude-code") -> tuple[Path, str]:
    """(the file, the event) of `agent`'s prompt hook: Claude Code's settings.json, Codex's hooks.json,
    Gemini CLI's settings.json."""
    if agent == "claude-code":
        return user_home / ".claude" / "settings.json", "UserPromptSubmit"
    from episodic.cli.agent_hooks import hooks_file, moment
    from episodic.cli.setup_agents import codex_home, gemini_home

    home = (
        codex_home(settings.codex_home, user_home)
        if agent == "codex"
        else gemini_home(settings.gemini_cli_home, user_home)
    )
    return hooks_file(agent, home), moment(agent, "hook_prompt").event


def hook_commands(user_home: Path, source: tuple[Path, str] | None = None) -> list[str]:
    """The episodic prompt-hook commands in `source` (default: the user's Claude Code settings), in order."""
    path, event = source or (user_home / ".claude" / "settings.json", "UserPromptSubmit")
    groups = ((_json_file(path).get("hooks") or {}).get(event)) or []
    return [
        str(h.get("command", ""))
        for g in groups
        if isinstance(g, dict)
        for h in g.get("hooks") or []
        if isinstance(h, dict) and str(h.get("command", "")).rstrip().endswith(HOOK_ARGS)
    ]


def probe_prompt(settings: Settings) -> str:
    """A card's own problem (so a working chain finds it), else a prompt of the right shape."""
    from episodic.assembly import build_store

    if settings.store != "sqlite" or not settings.db_path.exists():
        return FALLBACK_PROMPT
    try:
        for record in build_store(settings).iter_records(settings.tenant):
            if record.card.outcome.value == "verified" and len(record.card.problem.split()) >= 4:
                return record.card.problem[:400]
    except Exception:  # the index check reports an unreadable index; the probe still runs the hook
        return FALLBACK_PROMPT
    return FALLBACK_PROMPT


def _log_path() -> Path:
    return (
        envsource.home_dir() / "logs" / "hook.log"
    )  # where the hook writes (episodic.hooks.payload.log_outcome)


def _new_lines(path: Path, offset: int) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            size = path.stat().st_size
            handle.seek(offset if size >= offset else 0)  # rotated meanwhile: the new file from its start
            return [line for line in handle.read().splitlines() if " user-prompt-submit " in line]
    except OSError:
        return []


def classify(outcome: str) -> HookProbe:
    for start, status, fix in OUTCOMES:
        if outcome.startswith(start):
            return HookProbe(status, outcome, fix)
    return HookProbe("warn", outcome)


# an ok line that moved the server first: "ok: injected ...; another program answers at ...; moved ..."
_MOVED_AFTER_FOREIGN = re.compile(
    r"^(ok: .*?); ((?:another program|another home's episodic server) answers at .*)$"
)


def as_found(probe: HookProbe) -> HookProbe:
    """What doctor reports: another program on the configured port is a fail even when the hook then moved
    the server and the moved one answered within the same prompt (whether it did is a matter of speed)."""
    match = _MOVED_AFTER_FOREIGN.match(probe.detail)
    if not match:
        return probe
    return classify(f"fail: {match[2]}; the moved server then answered: {match[1]}")


def run_hook_probe(
    settings: Settings, user_home: Path, cwd: str | None = None, agent: str = "claude-code"
) -> HookProbe:
    """Run `agent`'s configured prompt-hook command once with a real payload; what it logged, classified."""
    path, event = prompt_hook_source(settings, user_home, agent)
    commands = hook_commands(user_home, (path, event))
    setup = SETUP.replace("claude-code", agent)
    if not commands:
        return HookProbe("fail", f"no episodic {event} hook in {path}", setup)
    cwd = cwd or os.getcwd()
    payload = {
        "session_id": PROBE_SESSION,
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": event,
        "prompt": probe_prompt(settings),
    }
    log = _log_path()
    offset = log.stat().st_size if log.exists() else 0
    env = {**os.environ, "EPISODIC_EXPERIMENT_ENABLED": "false"}  # a probe is no session of the experiment
    timeout = float(settings.hook_budget_seconds) + RUN_MARGIN_SECONDS
    try:
        done = subprocess.run(
            commands[0], shell=True, input=json.dumps(payload), capture_output=True, text=True,
            timeout=timeout, cwd=cwd, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return HookProbe(
            "fail", f"the hook command did not finish within {timeout:.0f} s: {commands[0]}", setup
        )
    lines = _new_lines(log, offset)
    if not lines:
        said = (done.stderr or done.stdout).strip()[-300:]
        detail = f"the hook command wrote no log line (exit {done.returncode}{': ' + said if said else ''})"
        return HookProbe("fail", detail, setup)
    outcome = re.sub(r" \(\d+ ms\)$", "", lines[-1].split(" user-prompt-submit ", 1)[1])
    probe = classify(outcome)
    if probe.status == "ok" and "additionalContext" not in done.stdout:
        return HookProbe("fail", f"{outcome}, but its stdout carried no additionalContext", setup)
    return HookProbe(probe.status, probe.detail, probe.fix.replace("claude-code", agent))


def listener(port: int) -> str:
    """Which process listens on the local TCP port ("pid 1234: python3 -m http.server 8765"), when this
    user may see it (Linux /proc); '' otherwise."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")  # 0A: LISTEN
    for proc in Path("/proc").iterdir() if inodes else ():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                return f"pid {proc.name}: {' '.join(command.split())[:120]}"
        except OSError:  # another user's process, or gone meanwhile
            continue
    return ""
