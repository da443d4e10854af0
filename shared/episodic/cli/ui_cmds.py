"""`episodic ui`: build the viewer over the local index (or a deployed endpoint), serve it on loopback."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import click

from episodic.cli.options import tenant_option
from episodic.kernel.settings import load_settings


@click.command("ui")
@click.option(
    "--host",
    default=None,
    help="Serve at this loopback address (default: 127.0.0.1, reached by a per-run <random>.localhost name, so no other local server gets its cookie).",
)
@click.option("--port", type=int, default=0, help="Port (default: any free port).")
@click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
@tenant_option("Whose cards")
@click.option(
    "--endpoint",
    default=None,
    help="A deployed MCP endpoint to view instead of the local index (its token: EPISODIC_TOKEN or --token-file).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="A file holding the endpoint's token (- reads stdin): read scope browses, write scope reviews.",
)
@click.option("--token", default=None, hidden=True, help="Refused: a token on the command line leaks.")
@click.option(
    "--eval-report",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="An `episodic eval --report` folder (default: <home>/eval-report).",
)
@click.option(
    "--dream",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A folder of dream records (default: <home>/dreams/<tenant>, where `episodic dream` writes them).",
)
def ui_cmd(
    host: str | None,
    port: int,
    no_open: bool,
    tenant: str | None,
    endpoint: str | None,
    token_file: Path | None,
    token: str | None,
    eval_report: Path | None,
    dream: Path | None,
) -> None:
    """Browse, search and review the memory in a web page.

    Browse, search and review the memory in a local web page (loopback only, per-run name and secret).
    """
    from episodic.ui.app import serve_ui
    from episodic.ui.security import PRINTED_KEY_SECONDS

    if token is not None:
        raise click.UsageError(
            "--token puts the token on the command line, where every local user can read it (/proc): "
            "set EPISODIC_TOKEN, or pass --token-file FILE (- reads stdin)"
        )
    settings = load_settings()
    if token_file is not None:
        token = _read_token(token_file)

    def ready(url: str) -> None:
        minutes = PRINTED_KEY_SECONDS / 60
        click.echo(f"episodic ui: {url}  (opens once, within {minutes:.0f} minutes; Ctrl-C to stop)")

    try:
        serve_ui(
            settings,
            host=host,
            port=port,
            open_browser=not no_open,
            tenant=tenant,
            endpoint=endpoint,
            token=token,
            eval_dir=eval_report,
            dream_dir=dream,
            on_ready=ready,
            on_no_browser=lambda hint: click.echo(hint, err=True),
        )
    except OSError as exc:  # the port is taken, or not ours to bind: one line, as `serve` says it
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"{host or 'the loopback'}:{port} is already in use by another process; pick another --port "
                "(or omit it: any free port)"
            ) from exc
        raise click.ClickException(
            f"cannot serve the viewer on {host or 'the loopback'}:{port}: {exc}"
        ) from exc


def register(group: click.Group) -> None:
    group.add_command(ui_cmd)


def _read_token(path: Path) -> str:
    """The first line of the file (or stdin for `-`), stripped; a usage error when empty or unreadable."""
    try:
        text = sys.stdin.read(4096) if str(path) == "-" else path.read_text(encoding="utf-8")[:4096]
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read the token file {path}: {exc}") from exc
    lines = text.strip().splitlines()
    if not lines or not lines[0].strip():
        raise click.UsageError(f"the token file {path} is empty")
    return lines[0].strip()
