"""CLI faces of serving: `serve`, `mcp`, `token add|list|revoke`, `setup claude-code|cursor`, `hook`.

Over 450 lines: the click declarations of `serve`, `mcp`, `token` and `setup`, whose options carry their help
text; the work is in setup_clients, setup_agents, agent_hooks and setup_steps.
"""

from __future__ import annotations

import errno
import sys

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.errors import EpisodicError


def _settings():  # type: ignore[no-untyped-def]
    from episodic.kernel.settings import load_settings

    return load_settings()


def _token_store():  # type: ignore[no-untyped-def]
    from episodic.kernel.auth import LocalTokenStore

    return LocalTokenStore(_settings().tokens_path)


@click.command("serve")
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1: this machine only).")
@click.option("--port", type=int, default=None, help="Port (default 8765; 0 picks a free one).")
def serve_cmd(host: str | None, port: int | None) -> None:
    """Serve MCP over HTTP at /mcp (bearer tokens).

    Serve MCP over HTTP at /mcp (bearer tokens from `episodic token add`).
    """
    from episodic.mcp.http_server import serve

    settings = _settings()

    def ready(httpd) -> None:  # type: ignore[no-untyped-def]
        click.echo(f"episodic MCP server listening on {httpd.url} (Ctrl-C to stop)", err=True)
        if str(httpd.server_address[0]) not in ("127.0.0.1", "::1", "localhost"):
            click.echo(
                "warning: reachable beyond this machine over plain HTTP; put TLS in front of it", err=True
            )
        if not _token_store().list():
            click.echo("no tokens yet: create one with `episodic token add --tenant NAME`", err=True)

    try:
        serve(settings, host, port, on_ready=ready)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            from episodic.hooks.local_server import port_taken_message

            where = (host or settings.host, settings.port if port is None else port)
            raise click.ClickException(port_taken_message(settings, *where)) from exc
        raise click.ClickException(str(exc)) from exc


@click.command("mcp")
def mcp_cmd() -> None:
    """Serve MCP over stdio (local tenant, no token).

    Serve MCP over stdio (for `claude mcp add episodic -- episodic mcp`); local tenant, no token.
    """
    from episodic.mcp.stdio import serve_stdio

    serve_stdio(_settings())


@click.group("token")
def token_group() -> None:
    """Bearer tokens for the HTTP server (each maps to one tenant)."""


def _tenant_cards(settings, tenant: str) -> int | None:  # type: ignore[no-untyped-def]
    """How many cards the tenant holds in the configured index (None when it cannot be read)."""
    from episodic.assembly import build_store

    if settings.store == "sqlite" and not settings.db_path.exists():
        return 0  # no index yet (and asking must not create one)
    try:
        store = build_store(settings)
        return store.count(tenant)
    except Exception:  # a warning's input: an unreadable index is doctor's to report
        return None


def _aws_options(command):  # type: ignore[no-untyped-def]
    command = click.option(
        "--secret", default=None, help="Secret id or ARN (default: the stack's TokensSecretArn output)."
    )(command)
    command = click.option("--profile", default=None, help="AWS profile.")(command)
    return click.option(
        "--aws", "on_aws", is_flag=True, help="The deployed stack's token secret, not the local file."
    )(command)


def _secret_store(secret: str | None, profile: str | None):  # type: ignore[no-untyped-def]
    from episodic.assembly import secret_token_store
    from episodic.harvest.state import read_stack_outputs

    settings = _settings()
    secret_id = secret or read_stack_outputs(settings.home).get("TokensSecretArn") or settings.auth_secret_id
    return secret_token_store(settings, str(secret_id), profile)


# a revoked token passes until API Gateway's cached answer (60 s) and the authorizer's secret cache (60 s) expire
REVOCATION_DELAY = (
    "within about 2 minutes (API Gateway caches an answer 60 s, the authorizer the secret 60 s)"
)


@token_group.command("add")
@tenant_option("The tenant whose cards this token may read")
@click.option(
    "--scope",
    type=click.Choice(["read", "write"]),
    default="read",
    show_default=True,
    help="What the token may do: read (search) or write too (record, review, link).",
)
@_aws_options
def token_add(tenant: str | None, scope: str, on_aws: bool, secret: str | None, profile: str | None) -> None:
    """Create a token and print it once (only its hash is stored)."""
    settings = _settings()
    tenant = tenant or settings.tenant  # the tenant `index` writes, so the token finds its cards
    if on_aws:
        store = _secret_store(secret, profile)
        token, added = store.add(tenant, scope)
        click.echo(token)
        click.echo(
            f"token {added.token_id} for tenant {tenant!r} ({scope}); shown once, store it now. "
            f"Its hash is in {store.secret_id}",
            err=True,
        )
        return
    store = _token_store()
    token = store.add(tenant, scope)
    info = next(t for t in store.list() if token.startswith(t.prefix) and t.tenant_id == tenant)
    click.echo(token)
    click.echo(
        f"token {info.token_id} for tenant {tenant!r} ({scope}); shown once, store it now "
        f"(e.g. as EPISODIC_TOKEN). Its hash is in {store.path}",
        err=True,
    )
    if _tenant_cards(settings, tenant) == 0:
        click.echo(
            f"warning: tenant {tenant!r} holds no cards, so this token's searches find nothing; "
            f"`episodic index` writes tenant {settings.tenant!r} (set `tenant` or EPISODIC_TENANT to change it)",
            err=True,
        )


@token_group.command("list")
@_aws_options
def token_list(on_aws: bool, secret: str | None, profile: str | None) -> None:
    """Tokens by id, tenant, scope and first characters (never the token)."""
    tokens = _secret_store(secret, profile).list() if on_aws else _token_store().list()
    if not tokens:
        click.echo("no tokens (create one with `episodic token add --tenant NAME`)")
        return
    click.echo(f"{'id':<10} {'tenant':<20} {'scope':<6} {'prefix':<10} created")
    for t in tokens:
        click.echo(f"{t.token_id:<10} {t.tenant_id:<20} {t.scope:<6} {t.prefix + '…':<10} {t.created_at}")


@token_group.command("revoke")
@click.argument("token_id")
@_aws_options
def token_revoke(token_id: str, on_aws: bool, secret: str | None, profile: str | None) -> None:
    """Revoke a token by its id (see `episodic token list`)."""
    info = _secret_store(secret, profile).revoke(token_id) if on_aws else _token_store().revoke(token_id)
    click.echo(f"revoked token {info.token_id} of tenant {info.tenant_id!r}")
    if on_aws:
        click.echo(f"the deployed endpoint refuses it {REVOCATION_DELAY}", err=True)


@click.group("setup")
def setup_group() -> None:
    """Configure Claude Code, Cursor, Codex CLI or Gemini CLI.

    Print (or --write) the configuration for Claude Code, Cursor, Codex CLI or Gemini CLI.
    """


def _finish(plan, write: bool) -> None:  # type: ignore[no-untyped-def]
    from episodic.cli.setup_clients import apply_plan, render_plan

    if not write:
        click.echo(render_plan(plan))
        return
    results = apply_plan(plan)
    for result in results:
        if result.changed:
            backup = f" (backup: {result.backup})" if result.backup else ""
            click.echo(f"updated {result.path}{backup}")
        else:
            click.echo(f"unchanged {result.path} (already configured)")
    for note in plan.notes:
        click.echo(note, err=True)


def _executable() -> str:
    from episodic.cli.setup_clients import installed_executable

    return installed_executable()


def _provision_hook_token(settings) -> None:  # type: ignore[no-untyped-def]
    from episodic.hooks.token import ensure_hook_token

    outcome = ensure_hook_token(settings)
    where = f" (`token` in {outcome.config_path})" if outcome.created else ""
    click.echo(f"prompt hook token: {outcome.reason}{where}")


_url_option = click.option("--url", default=None, help="The HTTP endpoint (…/mcp); omit for local stdio.")
_token_option = click.option(
    "--token",
    default=None,
    help="Bearer token for --url (written as ${EPISODIC_TOKEN} unless --literal-token).",
)
_literal_option = click.option(
    "--literal-token", is_flag=True, help="Write the --token value itself into the client's config file."
)
_write_option = click.option("--write", is_flag=True, help="Merge into the config files (keeps a backup).")


@setup_group.command("claude-code")
@_url_option
@_token_option
@_literal_option
@_write_option
@click.option(
    "--distiller",
    type=click.Choice(["heuristic", "claude-code"]),
    default=None,
    help="Which distiller `episodic index` uses (default: claude-code when `claude` is on PATH and logged in).",
)
@click.option(
    "--keep-transcripts-days",
    type=int,
    default=None,
    help="Raise Claude Code's cleanupPeriodDays to this many days (with --write; asked on a terminal).",
)
def setup_claude_code(
    url: str | None,
    token: str | None,
    literal_token: bool,
    write: bool,
    distiller: str | None,
    keep_transcripts_days: int | None,
) -> None:
    """The MCP server and hooks for Claude Code.

    `claude mcp add …` and the UserPromptSubmit hook for ~/.claude/settings.json; with --write, the
    local server is left answering for the first prompt.
    """
    from episodic.cli.distiller_choice import choose_distiller
    from episodic.cli.setup_clients import claude_code_plan, user_home
    from episodic.cli.setup_retention import offer_keep_transcripts
    from episodic.cli.setup_steps import announce_distiller, leave_server_answering, say_if_not_installed

    settings = _settings()
    _refuse_unrunnable(settings, distiller)  # before anything is written
    say_if_not_installed(settings, "claude-code", write)
    choice = choose_distiller(settings, distiller)
    plan = claude_code_plan(
        user_home(settings.user_home),
        url,
        token,
        _executable(),
        literal_token,
        settings.hook_session_end,  # an ended session gets its card without `index`, with any distiller
        dream_on_session_start=settings.dream_session_start,
        failure_hook=settings.hook_failure,
    )
    _finish(plan, write)
    offer_keep_transcripts(user_home(settings.user_home) / ".claude", keep_transcripts_days, write)
    local = url is None or url == settings.endpoint_url  # the hook asks the local server
    if write and local:
        _provision_hook_token(settings)
    announce_distiller(settings, choice, write)
    if write and local:
        leave_server_answering(_settings())  # again: setup has just written the hook's token


@setup_group.command("cursor")
@_url_option
@_token_option
@_literal_option
@_write_option
def setup_cursor(url: str | None, token: str | None, literal_token: bool, write: bool) -> None:
    """The episodic entry for ~/.cursor/mcp.json."""
    from episodic.cli.setup_clients import cursor_plan, user_home

    settings = _settings()
    _finish(cursor_plan(user_home(settings.user_home), url, token, _executable(), literal_token), write)


def _distiller_option(agent: str):  # type: ignore[no-untyped-def]
    return click.option(
        "--distiller",
        type=click.Choice(["heuristic", agent]),
        default=None,
        help=f"Which distiller `episodic index` uses (default: {agent} when its CLI is on PATH and logged in).",
    )


def _refuse_unrunnable(settings, distiller: str | None) -> None:  # type: ignore[no-untyped-def]
    from episodic.cli.distiller_choice import refuse_unrunnable

    refuse_unrunnable(settings, distiller)


def _choose_and_announce(agent: str, distiller: str | None, write: bool) -> None:
    from episodic.cli.distiller_choice import choose_distiller
    from episodic.cli.setup_steps import announce_distiller

    settings = _settings()
    announce_distiller(settings, choose_distiller(settings, distiller, agent), write, agent)


@setup_group.command("codex")
@_url_option
@_token_option
@_write_option
@_distiller_option("codex")
def setup_codex(url: str | None, token: str | None, write: bool, distiller: str | None) -> None:
    """The MCP server and hooks for Codex CLI.

    `codex mcp add …` and the [mcp_servers.episodic] table of $CODEX_HOME/config.toml.
    """
    from episodic.cli.setup_agents import apply_codex_plan, codex_home, codex_plan, render_codex_plan
    from episodic.cli.setup_clients import WRITE_AGAIN, user_home
    from episodic.cli.setup_steps import say_if_not_installed

    settings = _settings()
    _refuse_unrunnable(settings, distiller)  # before anything is written
    say_if_not_installed(settings, "codex", write)
    plan = codex_plan(
        codex_home(settings.codex_home, user_home(settings.user_home)), url, token, _executable()
    )
    if not write:  # the table, then the hooks, then how to write them all (as `setup claude-code` ends)
        click.echo(render_codex_plan(plan))
        _agent_hooks_step(settings, "codex", plan.config_file.parent, url, write)
        click.echo(WRITE_AGAIN)
        _choose_and_announce("codex", distiller, write)
        return
    result = apply_codex_plan(plan)
    backup = f" (backup: {result.backup})" if result.backup else ""
    click.echo(
        f"updated {result.path}{backup}"
        if result.changed
        else f"unchanged {result.path} (already configured)"
    )
    for note in plan.notes:
        click.echo(note, err=True)
    _agent_hooks_step(settings, "codex", plan.config_file.parent, url, write)
    _choose_and_announce("codex", distiller, write)


def _agent_hooks_step(
    settings, agent: str, agent_home, url: str | None, write: bool, server_entry=None
) -> None:  # type: ignore[no-untyped-def]
    """The prompt, failure and session-end hooks of Codex or Gemini CLI (episodic.cli.agent_hooks), the token
    they ask with; with --write, the local server left answering for the first prompt and the first failure."""
    from episodic.cli.agent_hooks import hooks_step
    from episodic.cli.setup_steps import leave_server_answering

    on = {
        "hook_prompt": settings.hook_prompt,
        "hook_failure": settings.hook_failure,
        "hook_session_end": settings.hook_session_end,
    }
    lines = hooks_step(agent, agent_home, _executable(), on, write, settings.codex_binary, server_entry)
    for line in lines:
        click.echo(line)
    local = url is None or url == settings.endpoint_url
    if write and local and (settings.hook_prompt or settings.hook_failure):
        # the token they ask the local server with; the hooks start that server themselves when it is down
        _provision_hook_token(settings)
        leave_server_answering(_settings(), agent)  # again: setup has just written the hooks' token


@setup_group.command("gemini")
@_url_option
@_token_option
@_write_option
@_distiller_option("gemini")
def setup_gemini(url: str | None, token: str | None, write: bool, distiller: str | None) -> None:
    """The MCP server and hooks for Gemini CLI.

    `gemini mcp add …` and the episodic entry of ~/.gemini/settings.json.
    """
    from episodic.cli.setup_agents import gemini_home, gemini_plan
    from episodic.cli.setup_clients import WRITE_AGAIN, render_plan, user_home
    from episodic.cli.setup_steps import say_if_not_installed

    settings = _settings()
    _refuse_unrunnable(settings, distiller)  # before anything is written
    say_if_not_installed(settings, "gemini", write)
    home = gemini_home(settings.gemini_cli_home, user_home(settings.user_home))
    plan = gemini_plan(home, url, token, _executable())
    if write:  # the server entry and the hooks share settings.json: one write, whose backup is the original
        _agent_hooks_step(settings, "gemini", home, url, write, plan.server_entry)
        for note in plan.notes:
            click.echo(note, err=True)
    else:  # the entry, then the hooks, then how to write them all
        click.echo(render_plan(plan, last=False))
        _agent_hooks_step(settings, "gemini", home, url, write)
        click.echo(WRITE_AGAIN)
    _choose_and_announce("gemini", distiller, write)


@click.command("doctor")
@json_option()
@click.option(
    "--aws", "aws", is_flag=True, help="Check the deployed stack `setup aws` recorded (search mode, harvest)."
)
def doctor_cmd(as_json: bool, aws: bool) -> None:
    """Check the chain from the executable to a memory.

    Check the chain from the executable to an injected memory; a fix for every failure.
    """
    import json

    if aws:
        from episodic.cli.doctor_aws import run_aws_checks

        checks = run_aws_checks(_settings())
    else:
        from episodic.cli.doctor import run_checks

        checks = run_checks(_settings())
    if as_json:
        click.echo(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        for check in checks:
            click.echo(f"[{check.status:<4}] {check.name}: {check.detail}")
            if check.fix:
                click.echo(f"       fix: {check.fix}")
    if any(c.status == "fail" for c in checks):
        raise SystemExit(1)


@click.group("hook")
def hook_group() -> None:
    """The agents' hooks (fail open: exit 0, print nothing).

    The agents' hooks (fail open: exit 0, print nothing on any failure).
    """


@hook_group.command("user-prompt-submit")
def hook_user_prompt_submit() -> None:
    """Claude Code's UserPromptSubmit hook.

    Inject up to 3 similar verified past episodes into the prompt's context.
    """
    from episodic.hooks.prompt import entry

    sys.stdout.flush()
    entry()


@hook_group.command("post-tool-failure")
def hook_post_tool_failure() -> None:
    """Claude Code's PostToolUseFailure hook.

    PostToolUseFailure (Bash): inject how an earlier session got past the same error, when one did.
    """
    from episodic.hooks.failure import entry

    sys.stdout.flush()
    entry()


@hook_group.command("session-distill")
def hook_session_distill() -> None:
    """The SessionEnd hook that distils a session.

    SessionEnd (Codex: Stop, once quiet): distil the ended session in the background.
    """
    from episodic.hooks.session_end import hook_main

    raise SystemExit(hook_main())


@click.command("distill-session", hidden=True)
@click.argument("transcript")
@click.option(
    "--after-quiet", is_flag=True, help="Wait until the file has not changed for distill_quiet_seconds."
)
def distill_session_cmd(transcript: str, after_quiet: bool) -> None:
    """The session-end worker: one session's card, heuristic first, then the agent CLI's (logged)."""
    from episodic.hooks.session_end import LOG_FILE, distill_session, log_line, wait_until_quiet

    settings = _settings()
    try:
        if after_quiet and not wait_until_quiet(settings.home, transcript, settings.distill_quiet_seconds):
            outcome = f"another worker waits for {transcript} to go quiet"
        else:
            outcome = distill_session(settings, transcript)
    except (EpisodicError, TimeoutError, OSError) as exc:
        outcome = f"failed for {transcript}: {type(exc).__name__}: {exc}"
    log_line(settings.home, f"worker: {outcome}")
    click.echo(f"{outcome} (logged in {settings.log_dir / LOG_FILE})", err=True)


def register(group: click.Group) -> None:
    for command in (
        serve_cmd,
        mcp_cmd,
        token_group,
        setup_group,
        hook_group,
        doctor_cmd,
        distill_session_cmd,
    ):
        group.add_command(command)
