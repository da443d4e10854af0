"""The `episodic` command: thin click faces over the core; errors become messages in one place."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodic.feature import Feature


def main() -> None:
    # the prompt hook must start fast: dispatch before importing click, pydantic or numpy
    if sys.argv[1:3] == ["hook", "user-prompt-submit"]:
        from episodic.hook import entry

        entry()
    if sys.argv[1:3] == ["hook", "post-tool-failure"]:
        from episodic.failure_hook import entry as failure_entry

        failure_entry()
    if sys.argv[1:3] == ["hook", "session-distill"]:
        from episodic.session_distill import hook_main

        raise SystemExit(hook_main())
    if sys.argv[1:3] == ["hook", "session-start"]:
        from episodic.dream.hook import main as session_start

        raise SystemExit(session_start())
    if sys.argv[1:3] == ["hook", "session-end"]:
        from episodic.harvest.spool import main as session_end

        raise SystemExit(session_end())
    cli = build_cli()
    cli(prog_name="episodic")


def build_cli(features: tuple[Feature, ...] | None = None) -> Any:
    """The `episodic` group with every registered feature's commands (`features`: the registered ones)."""
    import click

    from episodic.assembly.features import FEATURES
    from episodic.cli import cards_cmds, core_cmds, eval_cmds, harvest_cmds, mcp_cmds
    from episodic.cli.errors import EpisodicGroup  # errors are mapped there, once

    @click.group(cls=EpisodicGroup)
    @click.version_option(package_name="episodic")
    def cli() -> None:
        """Episodic memory for coding agents: one searchable card per past session."""

    # order matters: harvest adds `hook session-end` and `setup aws` to groups that mcp_cmds creates
    for area in (core_cmds, cards_cmds, mcp_cmds, eval_cmds, harvest_cmds):
        area.register(cli)
    from episodic.cli.setup_path import setup_path  # its own module: mcp_cmds stays under 400 lines

    mcp_cmds.setup_group.add_command(setup_path)
    from episodic.cli import ui_cmds

    ui_cmds.register(cli)
    for feature in FEATURES if features is None else features:  # each feature's commands (episodic.feature)
        feature.add_commands(cli)
    return cli


if __name__ == "__main__":
    main()
