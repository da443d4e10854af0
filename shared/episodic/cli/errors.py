"""The one place CLI errors are mapped: a typed core error (`errors.py`) becomes one clear line and exit 1;
and the one place a command warns of config keys no setting reads.

Commands let `EpisodicError` rise; the `episodic` group (and any group a test builds) is an `EpisodicGroup`.
"""

from __future__ import annotations

from typing import Any

import click

from episodic.errors import EpisodicError


def warn_about_config() -> None:
    """The config file's unknown keys on stderr, once a command (a typo is otherwise ignored silently)."""
    from episodic import envsource

    if envsource.config_path().is_file():
        from episodic.settings import config_warnings

        for warning in config_warnings():
            click.echo(f"warning: {warning}", err=True)


class EpisodicGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            warn_about_config()
            return super().invoke(ctx)
        except EpisodicError as exc:  # typed core errors → one clear line, exit 1
            raise click.ClickException(str(exc)) from exc
