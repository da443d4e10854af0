"""The `episodic` command: thin click faces over the core; errors become messages in one place.

May import: anything (a face).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodic.kernel.feature_contract import Feature


def main() -> None:
    # the prompt hook must start fast: dispatch before importing click, pydantic or numpy
    if sys.argv[1:3] == ["hook", "user-prompt-submit"]:
        from episodic.hooks.prompt import entry

        entry()
    if sys.argv[1:3] == ["hook", "post-tool-failure"]:
        from episodic.hooks.failure import entry as failure_entry

        failure_entry()
    if sys.argv[1:3] == ["hook", "session-distill"]:
        from episodic.hooks.session_end import hook_main

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
    """The `episodic` group with every registered feature's commands (`features`: given ones instead, built
    eagerly); the registered ones are built lazily, a command's modules imported when it is looked up."""
    import click

    from episodic.cli.lazy_group import LazyEpisodicGroup

    @click.group(cls=LazyEpisodicGroup)  # errors are mapped there (EpisodicGroup), once
    @click.version_option(package_name="episodic")
    def cli() -> None:
        """Episodic memory for coding agents: one searchable card per past session."""

    if features is not None:  # the core's areas, then exactly these features' commands
        from episodic.cli.lazy_group import AREAS, CORE_AREAS, run_area

        for area in CORE_AREAS:
            run_area(cli, area)
        cli.areas_run.update(AREAS)
        for feature in features:  # each feature's commands (episodic.kernel.feature_contract)
            feature.add_commands(cli)
    return cli


if __name__ == "__main__":
    main()
