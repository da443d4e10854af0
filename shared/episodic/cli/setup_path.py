"""`episodic setup path`: call the command as `episodic` (a link in ~/.local/bin), with consent (--write)."""

from __future__ import annotations

import os

import click


@click.command("path")
@click.option("--write", is_flag=True, help="Create the link (replacing an older episodic link).")
def setup_path(write: bool) -> None:
    """Link ~/.local/bin/episodic to this install.

    So `episodic …` works without `.venv/bin/`.
    """
    from episodic.cli.setup_clients import installed_executable, link_executable, path_link, user_home
    from episodic.kernel.settings import load_settings
    from episodic.plumbing import envsource

    executable = installed_executable()
    link = path_link(user_home(load_settings().user_home))
    if not write:
        click.echo(f"# Link {link} -> {executable}:\nln -sf {executable} {link}")
        click.echo("# Run again with --write to create the link.")
        return
    result = link_executable(executable, link)
    click.echo(f"{'linked' if result.changed else 'unchanged'} {link} -> {executable}")
    folders = [os.path.realpath(p) for p in envsource.environ().get("PATH", "").split(os.pathsep) if p]
    if os.path.realpath(link.parent) not in folders:
        click.echo(
            f'{link.parent} is not on PATH: add `export PATH="{link.parent}:$PATH"` to your shell profile',
            err=True,
        )


def register(group: click.Group) -> None:
    """`setup path` joins the `setup` group mcp_cmds makes (its own module: mcp_cmds stays under 400 lines)."""
    setup = group.commands["setup"]
    assert isinstance(setup, click.Group)
    setup.add_command(setup_path)
