"""The one place CLI errors are mapped: a typed core error (`errors.py`) becomes one clear line and exit 1.

Commands let `EpisodicError` rise; the `episodic` group (and any group a test builds) is an `EpisodicGroup`.
"""

from __future__ import annotations

from typing import Any

import click

from episodic.errors import EpisodicError


class EpisodicGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EpisodicError as exc:  # typed core errors → one clear line, exit 1
            raise click.ClickException(str(exc)) from exc
