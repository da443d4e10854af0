"""`episodic ui`: build the viewer over the local index (or a deployed endpoint), serve it on loopback."""

from __future__ import annotations

from pathlib import Path

import click

from episodic.settings import load_settings


def register(group: click.Group) -> None:
    @group.command("ui")
    @click.option("--port", type=int, default=0, help="Port on 127.0.0.1 (default: any free port).")
    @click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
    @click.option("--tenant", default=None, help="Whose cards (default: settings.tenant).")
    @click.option(
        "--endpoint",
        default=None,
        help="A deployed MCP endpoint to view instead of the local index (with --token).",
    )
    @click.option("--token", default=None, help="Its token: read scope to browse, write scope to review.")
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
        port: int,
        no_open: bool,
        tenant: str | None,
        endpoint: str | None,
        token: str | None,
        eval_report: Path | None,
        dream: Path | None,
    ) -> None:
        """Browse, search and review the memory in a local web page (127.0.0.1 only, per-run secret)."""
        from episodic.ui.app import serve_ui

        settings = load_settings()

        def ready(url: str) -> None:
            click.echo(f"episodic ui: {url}  (Ctrl-C to stop)")

        serve_ui(
            settings,
            port=port,
            open_browser=not no_open,
            tenant=tenant,
            endpoint=endpoint,
            token=token,
            eval_dir=eval_report,
            dream_dir=dream,
            on_ready=ready,
        )
