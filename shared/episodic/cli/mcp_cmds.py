"""CLI faces of serving: `serve`, `mcp`, `token add|list|revoke`, `setup claude-code|cursor`, `hook`."""

from __future__ import annotations

import shutil
import sys

import click

from episodic.errors import EpisodicError


def _settings():  # type: ignore[no-untyped-def]
    from episodic.settings import load_settings

    try:
        return load_settings()
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc


def _token_store():  # type: ignore[no-untyped-def]
    from episodic.auth import LocalTokenStore

    return LocalTokenStore(_settings().tokens_path)


@click.command("serve")
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1: this machine only).")
@click.option("--port", type=int, default=None, help="Port (default 8765; 0 picks a free one).")
def serve_cmd(host: str | None, port: int | None) -> None:
    """Serve MCP over HTTP at /mcp (bearer tokens from `episodic token add`)."""
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
    except (EpisodicError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("mcp")
def mcp_cmd() -> None:
    """Serve MCP over stdio (for `claude mcp add episodic -- episodic mcp`); local tenant, no token."""
    from episodic.mcp.stdio import serve_stdio

    try:
        serve_stdio(_settings())
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("token")
def token_group() -> None:
    """Bearer tokens for the HTTP server (each maps to one tenant)."""


@token_group.command("add")
@click.option("--tenant", required=True, help="The tenant whose cards this token may read.")
@click.option("--scope", type=click.Choice(["read", "write"]), default="read", show_default=True)
def token_add(tenant: str, scope: str) -> None:
    """Create a token and print it once (only its hash is stored)."""
    store = _token_store()
    try:
        token = store.add(tenant, scope)
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc
    info = next(t for t in store.list() if token.startswith(t.prefix) and t.tenant_id == tenant)
    click.echo(token)
    click.echo(
        f"token {info.token_id} for tenant {tenant!r} ({scope}); shown once, store it now "
        f"(e.g. as EPISODIC_TOKEN). Its hash is in {store.path}",
        err=True,
    )


@token_group.command("list")
def token_list() -> None:
    """Tokens by id, tenant, scope and first characters (never the token)."""
    try:
        tokens = _token_store().list()
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc
    if not tokens:
        click.echo("no tokens (create one with `episodic token add --tenant NAME`)")
        return
    click.echo(f"{'id':<10} {'tenant':<20} {'scope':<6} {'prefix':<10} created")
    for t in tokens:
        click.echo(f"{t.token_id:<10} {t.tenant_id:<20} {t.scope:<6} {t.prefix + '…':<10} {t.created_at}")


@token_group.command("revoke")
@click.argument("token_id")
def token_revoke(token_id: str) -> None:
    """Revoke a token by its id (see `episodic token list`)."""
    try:
        info = _token_store().revoke(token_id)
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"revoked token {info.token_id} of tenant {info.tenant_id!r}")


@click.group("setup")
def setup_group() -> None:
    """Print (or --write) the configuration for Claude Code, Cursor, Codex CLI or Gemini CLI."""


def _finish(plan, write: bool) -> None:  # type: ignore[no-untyped-def]
    from episodic.setup_clients import apply_plan, render_plan

    if not write:
        click.echo(render_plan(plan))
        return
    try:
        results = apply_plan(plan)
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc
    for result in results:
        if result.changed:
            backup = f" (backup: {result.backup})" if result.backup else ""
            click.echo(f"updated {result.path}{backup}")
        else:
            click.echo(f"unchanged {result.path} (already configured)")
    for note in plan.notes:
        click.echo(note, err=True)
    if shutil.which("episodic") is None:
        click.echo("note: `episodic` is not on PATH; Claude Code/Cursor need it there to run it", err=True)


_url_option = click.option("--url", default=None, help="The HTTP endpoint (…/mcp); omit for local stdio.")
_token_option = click.option(
    "--token", default=None, help="Bearer token (default: read from $EPISODIC_TOKEN)."
)
_write_option = click.option("--write", is_flag=True, help="Merge into the config files (keeps a backup).")


def _client_setup(name: str, planner: str, help_text: str) -> None:
    """One `setup <client>` command: plan (print, or merge with --write) the client's MCP config."""

    @setup_group.command(name, help=help_text)
    @_url_option
    @_token_option
    @_write_option
    def command(url: str | None, token: str | None, write: bool) -> None:
        from episodic import setup_clients

        home = setup_clients.user_home(_settings().user_home)
        _finish(getattr(setup_clients, planner)(home, url, token, "episodic"), write)


_client_setup(
    "claude-code",
    "claude_code_plan",
    "`claude mcp add …` and the UserPromptSubmit hook for ~/.claude/settings.json.",
)
_client_setup("cursor", "cursor_plan", "The episodic entry for ~/.cursor/mcp.json.")


@setup_group.command("codex")
@_url_option
@_token_option
@_write_option
def setup_codex(url: str | None, token: str | None, write: bool) -> None:
    """`codex mcp add …` and the [mcp_servers.episodic] table of $CODEX_HOME/config.toml."""
    from episodic.setup_agents import apply_codex_plan, codex_home, codex_plan, render_codex_plan
    from episodic.setup_clients import user_home

    settings = _settings()
    plan = codex_plan(codex_home(settings.codex_home, user_home(settings.user_home)), url, token, "episodic")
    if not write:
        click.echo(render_codex_plan(plan))
        return
    try:
        result = apply_codex_plan(plan)
    except EpisodicError as exc:
        raise click.ClickException(str(exc)) from exc
    backup = f" (backup: {result.backup})" if result.backup else ""
    click.echo(
        f"updated {result.path}{backup}"
        if result.changed
        else f"unchanged {result.path} (already configured)"
    )
    for note in plan.notes:
        click.echo(note, err=True)


@setup_group.command("gemini")
@_url_option
@_token_option
@_write_option
def setup_gemini(url: str | None, token: str | None, write: bool) -> None:
    """`gemini mcp add …` and the episodic entry of ~/.gemini/settings.json."""
    from episodic.setup_agents import gemini_home, gemini_plan
    from episodic.setup_clients import user_home

    settings = _settings()
    _finish(
        gemini_plan(
            gemini_home(settings.gemini_cli_home, user_home(settings.user_home)), url, token, "episodic"
        ),
        write,
    )


@click.group("hook")
def hook_group() -> None:
    """Claude Code hooks (fail open: exit 0, print nothing on any failure)."""


@hook_group.command("user-prompt-submit")
def hook_user_prompt_submit() -> None:
    """Inject up to 3 similar verified past episodes into the prompt's context."""
    from episodic.hook import entry

    sys.stdout.flush()
    entry()


def register(group: click.Group) -> None:
    for command in (serve_cmd, mcp_cmd, token_group, setup_group, hook_group):
        group.add_command(command)
