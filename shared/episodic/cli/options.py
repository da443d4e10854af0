"""Options many commands share, declared once: the same flag, type and help wherever a command takes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from episodic.cli.errors import TENANT

F = TypeVar("F", bound=Callable[..., Any])


def tenant_option(whose: str = "Whose memory") -> Callable[[F], F]:
    """`--tenant NAME` (None when not given: the command falls back to the configured tenant)."""
    return click.option(
        "--tenant", type=TENANT, default=None, help=f"{whose} (default: the configured tenant)."
    )


def json_option(what: str = "Print JSON instead of text.") -> Callable[[F], F]:
    """`--json`, passed to the command as `as_json`."""
    return click.option("--json", "as_json", is_flag=True, help=what)
