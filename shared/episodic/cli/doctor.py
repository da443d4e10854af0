"""`episodic doctor`: every link from the installed executable to an injected memory, each with its fix.

The chain: executable → MCP entry → hook entry → server reachable → token valid for the tenant that
holds the cards → index non-empty → embedder parity. A failing link names the command that mends it.

Over 450 lines: one check a link of the chain, in the chain's order, each with its fix; the per-agent and
configuration checks are apart (doctor_agents, doctor_config).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from episodic.cards.present import counted
from episodic.cli.hook_probe import hook_commands, listener
from episodic.cli.setup_clients import (
    FAILURE_ARGS,
    FAILURE_EVENT,
    SERVER_NAME,
    SESSION_DISTILL_ARGS,
    TOKEN_ENV,
    installed_executable,
    user_home,
)
from episodic.kernel.errors import EpisodicError
from episodic.kernel.models import CardRecord, DistillerInfo
from episodic.kernel.settings import Settings
from episodic.plumbing import envsource

OK, WARN, FAIL = "ok", "warn", "fail"
PROBE_QUERY = "episodic doctor probe: does this token reach the search tool"


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _runnable(command: str) -> bool:
    if "/" not in command:
        return shutil.which(command) is not None
    return Path(command).is_file() and os.access(command, os.X_OK)


def check_executable() -> tuple[Check, str | None]:
    try:
        path = installed_executable()
    except EpisodicError as exc:
        return Check(
            "executable", FAIL, str(exc), "run `./scripts/install`, then `.venv/bin/episodic doctor`"
        ), None
    on_path = shutil.which("episodic")
    if on_path and os.path.realpath(on_path) == os.path.realpath(path):
        return Check("executable", OK, path), path
    # the fixes below say `episodic`, one way: here is what that means when the shell does not find it
    elsewhere = f"PATH's `episodic` is another install ({on_path})" if on_path else "not on PATH"
    detail = (
        f"{path} ({elsewhere}: each `episodic` in the fixes below means this path; "
        f"`{shlex.quote(path)} setup path --write` links it as `episodic`)"
    )
    return Check("executable", OK, detail), path


def check_mcp_entry(home: Path, setup: str, current: str | None) -> Check:
    path = home / ".claude.json"
    entry = ((_json_file(path) or {}).get("mcpServers") or {}).get(SERVER_NAME)
    if not isinstance(entry, dict):
        return Check("MCP entry", FAIL, f"no {SERVER_NAME!r} server in {path}", setup)
    if entry.get("type") == "http" or "url" in entry:
        header = str((entry.get("headers") or {}).get("Authorization", ""))
        if "${" + TOKEN_ENV + "}" in header and not envsource.environ().get(TOKEN_ENV):
            return Check(
                "MCP entry",
                WARN,
                f"HTTP {entry.get('url')} reads ${{{TOKEN_ENV}}}, which is not set here",
                f"export {TOKEN_ENV}=<token> in the shell profile Claude Code starts from",
            )
        return Check("MCP entry", OK, f"HTTP {entry.get('url')}")
    command = str(entry.get("command", ""))
    if not _runnable(command):
        why = "not on PATH" if "/" not in command else "missing (the virtualenv moved or was removed?)"
        return Check("MCP entry", FAIL, f"stdio command {command!r} is {why}", setup)
    if current and command != current:
        return Check("MCP entry", WARN, f"stdio command {command} is not this install ({current})", setup)
    return Check("MCP entry", OK, f"stdio {command} {' '.join(entry.get('args') or [])}")


def check_hook_entry(home: Path, setup: str) -> Check:
    path = home / ".claude" / "settings.json"
    commands = hook_commands(home)
    if not commands:
        return Check("hook entry", FAIL, f"no episodic UserPromptSubmit hook in {path}", setup)
    try:
        program = shlex.split(commands[0])[0]
    except (ValueError, IndexError):
        return Check("hook entry", FAIL, f"unreadable hook command {commands[0]!r}", setup)
    if not _runnable(program):
        return Check("hook entry", FAIL, f"hook command {program!r} cannot be run", setup)
    extra = f" ({len(commands)} episodic hooks: one would do)" if len(commands) > 1 else ""
    return Check("hook entry", WARN if extra else OK, f"{commands[0]}{extra}", setup if extra else "")


def check_failure_hook_entry(settings: Settings, home: Path, setup: str) -> Check:
    """The PostToolUseFailure hook of Bash (the fix of an earlier session), or that it is switched off."""
    if not settings.hook_failure:
        return Check("failure hook", OK, "switched off (hook_failure = false / EPISODIC_HOOK_FAILURE=false)")
    path = home / ".claude" / "settings.json"
    groups = (((_json_file(path) or {}).get("hooks") or {}).get(FAILURE_EVENT)) or []
    found = [
        (str(g.get("matcher") or "*"), str(h.get("command", "")))
        for g in groups
        if isinstance(g, dict)
        for h in g.get("hooks") or []
        if isinstance(h, dict) and str(h.get("command", "")).rstrip().endswith(FAILURE_ARGS)
    ]
    if not found:
        return Check("failure hook", WARN, f"no episodic {FAILURE_EVENT} hook in {path}", setup)
    matcher, command = found[0]
    if not settings.failure_memory:
        return Check("failure hook", WARN, f"{command} runs, but failure_memory is off: it finds nothing",
                     "set failure_memory = true (then `episodic index`)")  # fmt: skip
    return Check("failure hook", OK, f"{command} (matcher {matcher})")


PROBE_TIMEOUT_SECONDS = 60.0  # doctor's one distil call; `index` allows distill_timeout_seconds


def _agent_answers(settings: Settings) -> Check:
    """Whether the agent CLI is logged in and one short distil call, as `index` makes it, comes back
    (login first: each CLI's own check needs no model call)."""
    from episodic.distill.agents import distiller_for
    from episodic.kernel.errors import RetryableDistillError

    kind = settings.distiller
    distiller = distiller_for(settings, kind)
    distiller.timeout_seconds = min(distiller.timeout_seconds, PROBE_TIMEOUT_SECONDS)
    logged_in, how = distiller.login()
    if logged_in is False:
        fix = f"{distiller.agent.login_fix}, then `episodic index`"
        return Check("distiller", FAIL, f"{kind}, but {distiller.agent.logged_out(how)}", fix)
    try:
        answered = distiller.probe()
    except RetryableDistillError as exc:
        return Check("distiller", WARN, f"{kind}, {how}, but a probe distil did not come back: {exc}")
    except EpisodicError as exc:
        fix = f"check `{distiller.agent.default_binary}_model` and `{distiller.binary}` by hand"
        return Check("distiller", FAIL, f"{kind}, {how}, but a probe distil failed: {exc}", fix)
    return Check("distiller", OK, f"{kind}, {how}; a probe distil: {answered}")


def check_distiller(settings: Settings, home: Path, setup: str, claude_code: bool = True) -> Check:
    from episodic.distill.agent_cli import AGENT_KINDS, options_from

    kind = settings.distiller
    if kind not in AGENT_KINDS:
        return Check("distiller", OK, f"{kind}")
    binary = options_from(settings, kind)["binary"]
    if shutil.which(binary) is None:
        fix = f"install {binary}, or `episodic setup {kind} --distiller heuristic --write`"
        return Check("distiller", FAIL, f"{kind}, but {binary!r} is not on PATH", fix)
    answers = _agent_answers(settings)
    if answers.status == FAIL or kind != "claude-code" or not claude_code:  # its SessionEnd hook: below
        return answers
    groups = (
        ((_json_file(home / ".claude" / "settings.json") or {}).get("hooks") or {}).get("SessionEnd")
    ) or []
    installed = any(
        isinstance(h, dict) and str(h.get("command", "")).rstrip().endswith(SESSION_DISTILL_ARGS)
        for g in groups
        if isinstance(g, dict)
        for h in g.get("hooks") or []
    )
    if not installed:
        return Check("distiller", WARN, "claude-code, but no SessionEnd hook distils ended sessions", setup)
    if answers.status != OK:
        return answers
    return Check("distiller", OK, f"{answers.detail}; SessionEnd distils ended sessions in the background")


def _reachable(url: str, timeout: float = 1.0) -> bool:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def _foreign_at(url: str, token: str | None) -> str:
    """What answers at a local url when it is not this home's server (the hook's own test); '' if ours."""
    from episodic.hooks import prompt as hook

    try:
        hook.ask_server(url, token or "-", PROBE_QUERY, 5.0)
    except hook.ForeignServer as foreign:
        who = listener(urlsplit(url).port or 80)
        return str(foreign).removeprefix("fail: ") + (f" [{who}]" if who else "")
    except hook.HookSkip:  # ours, refusing or slow: the token and hook checks say which
        return ""
    return ""


def check_hook_run(settings: Settings, home: Path, agent: str = "claude-code", indexed: bool = True) -> Check:
    """The prompt hook command `agent` runs, run once with a real payload: what it logged, with the fix
    (on an empty index its empty answer is that nothing is indexed yet, not a miss)."""
    from episodic.cli.hook_probe import as_found, prompt_hook_source, run_hook_probe

    name = "prompt hook" if agent == "claude-code" else f"prompt hook runs ({agent})"
    path, event = prompt_hook_source(settings, home, agent)
    if not hook_commands(home, (path, event)):  # the entry's own check above says so, with its fix
        return Check(name, WARN, f"not tried: there is no {event} hook to run (its entry is missing, above)")
    probe = as_found(run_hook_probe(settings, home, agent=agent))
    if not indexed and probe.detail.startswith("ok: no confident"):
        detail = "nothing indexed yet: the hook ran and answered, with no card to give"
        return Check(name, WARN, detail, "`episodic index`")
    return Check(name, probe.status, probe.detail, probe.fix)


def check_server(settings: Settings, agent: str = "claude-code") -> tuple[Check, bool]:
    from episodic.hooks.local_server import recorded_pid

    url = settings.endpoint_url
    if _reachable(url):
        foreign = _foreign_at(url, settings.token)
        if foreign:
            fix = "the prompt hook moves this home's server to a free port on the next prompt (saved in the config); "
            fix += f"`episodic setup {agent} --write` does it now"
            return Check("server reachable", FAIL, foreign, fix), False
        pid = recorded_pid(settings.home)
        started = f" (pid {pid}, the background server setup or the hook started)" if pid else ""
        return Check("server reachable", OK, url + started), True
    local = (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")
    if local and settings.hook_autostart:
        detail = f"nothing answers at {url}; the prompt hook starts `episodic serve` on the next prompt"
        fix = f"`episodic setup {agent} --write` starts it and waits until it answers"
        return Check("server reachable", WARN, detail, fix), False
    fix = "`episodic serve`" if local else f"check that {url} is up and reachable from here"
    return Check("server reachable", FAIL, f"nothing answers at {url}", fix), False


def check_token(
    settings: Settings, up: bool, count: Callable[[str], int], agent: str = "claude-code"
) -> Check:
    from episodic.hooks.token import endpoint_is_local
    from episodic.kernel.auth import LocalTokenStore

    setup_fix = f"`episodic setup {agent} --write` (keeps a read token for the configured tenant)"
    if not settings.token:
        return Check("token", FAIL, "the prompt hook has no token", setup_fix)
    if endpoint_is_local(settings):
        try:
            tenant = LocalTokenStore(settings.tokens_path).authenticate(settings.token).tenant_id
        except EpisodicError as exc:
            return Check("token", FAIL, f"the hook's token does not authenticate: {exc}", setup_fix)
        cards = count(tenant)
        if cards == 0:
            detail = (
                f"the token reads tenant {tenant!r}, which holds no cards (index writes {settings.tenant!r})"
            )
            return Check("token", FAIL, detail, setup_fix)
        return Check("token", OK, f"reads tenant {tenant!r} ({cards} cards)")
    if not up:
        return Check("token", WARN, "not checked: the server is not reachable")
    from episodic.hooks import prompt as hook

    try:
        hook.ask_server(settings.endpoint_url, settings.token, PROBE_QUERY, 5.0)
    except hook.HookSkip as skip:
        return Check(
            "token", FAIL, f"the server refused the hook's search: {skip}", "a token from its operator"
        )
    return Check("token", OK, f"{settings.endpoint_url} accepts the hook's token")


def check_index(settings: Settings, count: Callable[[str], int], total: int) -> Check:
    cards = count(settings.tenant)
    if cards:
        return Check("index", OK, f"{cards} cards for tenant {settings.tenant!r}")
    if not total:
        return Check("index", FAIL, "nothing indexed yet", "`episodic index`")
    where = f"; the index holds {total} cards of other tenants"
    return Check("index", FAIL, f"no cards for tenant {settings.tenant!r}{where}", "`episodic index`")


def check_parity(settings: Settings, stored: Any) -> Check:
    from episodic.assembly import build_embedder
    from episodic.kernel.models import IndexManifest
    from episodic.store.parity import check_parity as parity

    if stored is None:
        return Check(
            "embedder parity", WARN, "the index has no manifest yet (nothing indexed)", "`episodic index`"
        )
    try:
        embedder = build_embedder(settings)
        parity(
            stored,
            IndexManifest(
                embedder_id=embedder.id, dimension=embedder.dimension, renderings=settings.renderings
            ),
            str(settings.db_path),
            "query",
        )
    except EpisodicError as exc:
        return Check("embedder parity", FAIL, "the configured embedder does not match the index", str(exc))
    return Check("embedder parity", OK, f"{stored.embedder_id} ({stored.dimension}-d)")


def check_opening(settings: Settings, records: Iterable[CardRecord]) -> Check | None:
    """Offline cards indexed before the `opening` rendering existed rank without it until re-distilled."""
    from episodic.cards.write import HEURISTIC, takes_opening

    if not takes_opening(settings, DistillerInfo(kind=HEURISTIC)):
        return None
    offline = lacking = 0
    for record in records:
        if takes_opening(settings, record.distiller):
            offline += 1
            lacking += record.opening is None
    if lacking:
        detail = (
            f"{lacking} of {offline} offline cards have no opening vector yet (indexed before it existed)"
        )
        return Check("opening words", WARN, detail, "`episodic index` (re-distils each of them once)")
    return Check("opening words", OK, f"{offline} offline cards carry their session's opening words")


def check_judge(settings: Settings) -> Check | None:
    """The local judge's model (episodic.judge): installed and the pinned files, or one line saying why
    search keeps the first stage's order; None when another second stage (or none) is configured."""
    if settings.reranker != "local":
        return None
    from episodic.judge.model import MODEL_NAME, ModelProblem, check_model_dir, default_model_dir

    model_dir = settings.judge_model_dir or default_model_dir()
    try:
        check_model_dir(model_dir)
        import onnxruntime  # noqa: F401 - only whether it imports
    except ModelProblem as exc:
        return Check("judge", WARN, f"{exc}; search uses the first stage alone", "`scripts/install`")
    except ImportError as exc:
        return Check(
            "judge",
            WARN,
            f"onnxruntime does not import ({exc}); search uses the first stage alone",
            "`scripts/install`",
        )
    return Check("judge", OK, f"{MODEL_NAME} (int8) at {model_dir}, files as pinned")


def check_scope(settings: Settings, cwd: str) -> Check:
    """The scope rules and what they decide for the current directory (its `.episodic` file included)."""
    from episodic.sessions.scope_source import rules_from_settings

    rules = rules_from_settings(settings)
    configured = "; ".join(f"{k} {', '.join(v)}" for k, v in rules.describe().items() if v) or "no rules set"
    index, inject = rules.decide("index", cwd), rules.decide("inject", cwd)
    repo = rules.repo_file(cwd)
    here = (
        f"{cwd}: index {'yes' if index.included else 'no'} ({rules.why(index)}), "
        f"inject {'yes' if inject.included else 'no'} ({rules.why(inject)})"
    )
    if repo is not None and repo.error:
        fix = f"fix {repo.path}: `index = true|false`, `inject = true|false` (TOML)"
        return Check("scope", WARN, f"{configured}; {here}", fix)
    return Check("scope", OK, f"{configured}; {here}")


def check_experiment(settings: Settings) -> Check:
    from episodic.experiment.holdout import read_log

    if not settings.experiment_enabled:
        return Check("experiment", OK, "off: every eligible prompt gets memory")
    sessions: dict[str, str] = {}
    for entry in read_log(settings.home):
        sessions.setdefault(str(entry["session_id"]), str(entry["arm"]))
    held = sum(1 for arm in sessions.values() if arm == "without")
    share = settings.experiment_holdout
    one_in = round(1 / share) if share > 0 else 0
    withheld = f"1 session in {one_in} gets" if one_in * share == 1 else f"{share:.0%} of sessions get"
    return Check(
        "experiment",
        OK,
        f"on (the default): {withheld} no memory, to measure whether memory helps; logged "
        f"{counted(len(sessions), 'session')} ({held} without memory): `episodic experiment report`; off: "
        "`experiment_enabled = false` in config.toml",
    )


def check_injections(settings: Settings) -> Check:
    """What memory gave sessions lately and the share they used (`episodic injections` shows more)."""
    from episodic.injections.cli import summary_line

    try:
        return Check("injections", OK, f"{summary_line(settings)}: `episodic injections`")
    except EpisodicError as exc:
        return Check("injections", WARN, f"cannot read the injection records: {exc}")


HARVEST_STALE_DAYS = 3  # Claude Code deletes transcripts after 30 days; a week of silence is already late


def check_harvest(settings: Settings, now: datetime | None = None) -> Check | None:
    """The last harvest's mark (`<log_dir>/last-harvest.json`): a failed or stale run is shown here, not only
    in a log; None when this machine never harvested and has no stack outputs (no AWS deployment)."""
    from episodic.harvest.state import read_last_run, read_stack_outputs

    last = read_last_run(settings.log_dir)
    if last is None:
        try:
            deployed = bool(read_stack_outputs(settings.home))
        except EpisodicError:
            deployed = True
        fix = "`episodic harvest`, then `episodic cron install`"
        return Check("harvest", WARN, "no harvest has run on this machine", fix) if deployed else None
    finished = str(last.get("finished_at") or "")
    failed = last.get("failed") or []
    if last.get("aborted") or failed:
        reason = last.get("aborted") or f"{len(failed)} sessions failed, first: {failed[0].get('reason')}"
        fix = "fix the cause (expired credentials: `aws sso login`), then `episodic harvest`"
        return Check("harvest", FAIL, f"the last harvest ({finished}) failed: {reason}", fix)
    try:
        age = (now or datetime.now(UTC)) - datetime.fromisoformat(finished.replace("Z", "+00:00"))
    except ValueError:
        age = None
    if age is not None and age.days >= HARVEST_STALE_DAYS:
        detail = f"the last harvest ran {age.days} days ago ({finished})"
        return Check("harvest", WARN, detail, "`episodic cron status` (is the schedule installed?)")
    return Check("harvest", OK, f"last run {finished}: uploaded {last.get('uploaded', 0)}")


def run_checks(settings: Settings) -> list[Check]:
    from episodic.assembly import build_store
    from episodic.cli.cleanup_risk import doctor_findings
    from episodic.cli.doctor_agents import agent_rows, agents_set_up
    from episodic.cli.doctor_config import config_rows

    home = user_home(settings.user_home)
    executable_check, current = check_executable()
    agents = agents_set_up(settings) or ["claude-code"]  # only the agents set up; none yet: Claude Code's
    setup = "`episodic setup claude-code --write` (re-running it fixes old entries)"
    claude = "claude-code" in agents
    checks = [executable_check]
    if claude:
        checks += [
            check_mcp_entry(home, setup, current),
            check_hook_entry(home, setup),
            check_failure_hook_entry(settings, home, setup),
        ]
    checks += [
        Check(*row) for agent in agents if agent != "claude-code" for row in agent_rows(settings, agent)
    ]
    checks += [
        check_distiller(settings, home, setup, claude),
        check_scope(settings, os.getcwd()),
        check_experiment(settings),
        check_injections(settings),
        *(Check(*row) for row in config_rows()),  # unknown keys in the config file
    ]
    harvest = check_harvest(settings)
    checks += [harvest] if harvest else []
    judge = check_judge(settings)
    checks += [judge] if judge else []
    # the sessions Claude Code deletes within a week that are not indexed yet
    checks += [Check("agent cleanup", *finding) for finding in doctor_findings(settings)]
    server, up = check_server(settings, agents[0])
    checks.append(server)
    if settings.store == "sqlite" and not settings.db_path.exists():
        detail = f"nothing indexed yet (no index at {settings.db_path})"
        return [*checks, Check("index", FAIL, detail, "`episodic index`")]
    try:
        store = build_store(settings)
        total, stored = store.count(None), store.manifest()
    except EpisodicError as exc:
        return [*checks, Check("index", FAIL, f"cannot open the index: {exc}", "`episodic index`")]
    checks.append(check_token(settings, up, store.count, agents[0]))
    checks.append(check_index(settings, store.count, total))
    indexed = bool(store.count(settings.tenant))
    checks += [
        check_hook_run(settings, home, agent, indexed)
        for agent in agents
        if agent == "claude-code" or settings.hook_prompt
    ]
    checks.append(check_parity(settings, stored))
    if settings.store == "sqlite":  # a local read; a remote index would be listed whole
        opening = check_opening(settings, store.iter_records(settings.tenant))
        checks += [opening] if opening else []
    return checks
