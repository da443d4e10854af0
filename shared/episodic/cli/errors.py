"""The one place CLI errors are mapped: a typed core error (`errors.py`) becomes one clear line and exit 1;
and the one place a command warns of config keys no setting reads.

Commands let `EpisodicError` rise; the `episodic` group (and any group a test builds) is an `EpisodicGroup`.
"""

from __future__ import annotations

from typing import Any

import click

from episodic.kernel.errors import EpisodicError


def warn_about_config() -> None:
    """The config file's unknown keys on stderr, once a command (a typo is otherwise ignored silently)."""
    from episodic.plumbing import envsource

    if envsource.config_path().is_file():
        from episodic.kernel.settings import config_warnings

        for warning in config_warnings():
            click.echo(f"warning: {warning}", err=True)


class EpisodicGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            warn_about_config()
            return super().invoke(ctx)
        except EpisodicError as exc:  # typed core errors → one clear line, exit 1
            raise click.ClickException(str(exc)) from exc


class _OneLineBadParameter(click.BadParameter):
    """A bad option value said in one line (exit 2), before the command reads anything."""

    def show(self, file: Any = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)


class TenantName(click.ParamType):
    """`--tenant NAME`, checked by the one tenant rule (`models.check_tenant`) wherever the CLI takes it."""

    name = "tenant"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from episodic.kernel.models import check_tenant

        try:
            return check_tenant(str(value))
        except EpisodicError as exc:
            raise _OneLineBadParameter(str(exc), ctx, param) from exc


TENANT = TenantName()
