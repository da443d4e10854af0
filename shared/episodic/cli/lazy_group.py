"""The `episodic` group imports only the command modules of the command being run (every CLI
process paid ~0.4 s for modules it never used); `--help` and completion still import them all.

A command area is a `register(group)` function; COMMANDS says which areas build each top-level command, run
in AREAS order. An area that adds to another's group (harvest: `hook session-end`, `setup aws`; setup_path)
comes with that area wherever it is listed, so the order commands are looked up in never matters.
tests/unit/test_cli_lazy.py checks this table against the eager build from the registered features.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from episodic.cli.errors import EpisodicGroup

# "module:function" adding its commands to the `episodic` group; core areas first, then each feature's `cli`
AREAS: dict[str, str] = {
    "core": "episodic.cli.core_cmds:register",
    "cards": "episodic.cli.cards_cmds:register",
    "mcp": "episodic.cli.mcp_cmds:register",
    "eval": "episodic.cli.eval_cmds:register",
    "harvest": "episodic.cli.harvest_cmds:register",
    "setup_path": "episodic.cli.setup_path:register",
    "ui": "episodic.cli.ui_cmds:register",
    "dream": "episodic.dream.cli:register",
    "scratch": "episodic.scratch.cli:register",
    "history": "episodic.history.cli:register",
    "experiment": "episodic.experiment.cli:register",
    "injections": "episodic.injections.cli:register",
}

COMMANDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("index", "search", "show", "inspect", "stats", "demo", "quickstart"), ("core",)),
    "cards": ("cards",),
    **dict.fromkeys(("serve", "mcp", "token", "doctor", "distil-session"), ("mcp",)),
    "setup": ("mcp", "harvest", "setup_path"),
    "hook": ("mcp", "harvest"),
    "eval": ("eval",),
    **dict.fromkeys(("harvest", "backfill", "cron"), ("mcp", "harvest")),
    "ui": ("ui",),
    "dream": ("dream",),
    "scratch": ("scratch",),
    **dict.fromkeys(("history", "link", "resume"), ("history",)),
    "experiment": ("experiment",),
    "injections": ("injections",),
}


def run_area(group: click.Group, area: str) -> None:
    module, _, name = AREAS[area].partition(":")
    getattr(importlib.import_module(module), name)(group)


class LazyEpisodicGroup(EpisodicGroup):
    """Builds a top-level command on first lookup from the areas that make it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.areas_run: set[str] = set()

    def load(self, areas: tuple[str, ...] | list[str]) -> None:
        for area in (a for a in AREAS if a in areas and a not in self.areas_run):  # AREAS order
            self.areas_run.add(area)
            run_area(self, area)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self.load(COMMANDS.get(cmd_name, tuple(AREAS)))  # an unknown name: every command, for "Did you mean"
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load(list(AREAS))
        return super().list_commands(ctx)
