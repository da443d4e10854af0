"""The `episodic` group imports only the command modules of the command being run (importing them all cost
every CLI process time it never used: docs/performance.md); `--help` and completion still import them all.

A command area is a `register(group)` function; COMMANDS says which areas build each top-level command, run
in AREAS order: the core's are listed here, a feature's are its feature.py's `cli` and `commands` (one
registration). An area that adds to another's group (harvest: `hook session-end`, `setup aws`; setup_path)
comes with that area wherever it is listed, so the order commands are looked up in never matters.
tests/unit/cli/test_cli_lazy.py checks these tables against the eager build from the registered features.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import click

from episodic.cli.errors import EpisodicGroup

# "module:function" adding the core's commands to the `episodic` group; a feature's come from its feature.py
CORE_AREAS: dict[str, str] = {
    "core": "episodic.cli.core_cmds:register",
    "cards": "episodic.cli.cards_cmds:register",
    "mcp": "episodic.cli.mcp_cmds:register",
    "eval": "episodic.cli.eval_cmds:register",
    "harvest": "episodic.cli.harvest_cmds:register",
    "setup_path": "episodic.cli.setup_path:register",
    "ui": "episodic.cli.ui_cmds:register",
}

CORE_COMMANDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("index", "search", "show", "inspect", "stats", "demo", "quickstart"), ("core",)),
    "cards": ("cards",),
    **dict.fromkeys(("serve", "mcp", "token", "doctor", "distill-session"), ("mcp",)),
    "setup": ("mcp", "harvest", "setup_path"),
    "hook": ("mcp", "harvest"),
    "eval": ("eval",),
    **dict.fromkeys(("harvest", "backfill", "cron"), ("mcp", "harvest")),
    "ui": ("ui",),
}


@functools.cache
def tables() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(AREAS, COMMANDS): the core's, then each registered feature's `cli` and `commands` (its one registration)."""
    from episodic.assembly.features import FEATURES

    areas = {**CORE_AREAS, **{feature.name: feature.cli for feature in FEATURES if feature.cli}}
    commands = {**CORE_COMMANDS, **{name: (f.name,) for f in FEATURES if f.cli for name in f.commands}}
    return areas, commands


def __getattr__(name: str) -> Any:
    """AREAS and COMMANDS, the whole tables, read from the features only when asked for."""
    if name in ("AREAS", "COMMANDS"):
        return tables()[name == "COMMANDS"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_area(group: click.Group, area: str) -> None:
    module, _, name = (CORE_AREAS.get(area) or tables()[0][area]).partition(":")
    getattr(importlib.import_module(module), name)(group)


class LazyEpisodicGroup(EpisodicGroup):
    """Builds a top-level command on first lookup from the areas that make it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.areas_run: set[str] = set()

    def load(self, areas: tuple[str, ...] | list[str]) -> None:
        order = (
            CORE_AREAS if all(a in CORE_AREAS for a in areas) else tables()[0]
        )  # the core's alone: no feature
        for area in (a for a in order if a in areas and a not in self.areas_run):  # AREAS order
            self.areas_run.add(area)
            run_area(self, area)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        areas = CORE_COMMANDS.get(cmd_name) or tables()[1].get(cmd_name) or tuple(tables()[0])
        self.load(areas)  # an unknown name: every command, for "Did you mean"
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load(list(tables()[0]))
        return super().list_commands(ctx)
