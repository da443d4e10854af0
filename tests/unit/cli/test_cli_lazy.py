"""The lazy `episodic` group (issue 41): the same commands, options and help as the eager build from the
registered features, its table of which command areas build each command is right, and a cheap command
imports only what it needs (checked through `sys.modules` in a fresh interpreter, never a timer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner
from episodic.assembly.features import FEATURES
from episodic.cli import build_cli
from episodic.cli.lazy_group import AREAS, COMMANDS

SHARED = Path(__file__).resolve().parents[3] / "shared"


def command_tree(command: click.Command) -> dict[str, Any]:
    """Everything `--help` shows of a command and of each subcommand, recursively."""
    tree: dict[str, Any] = {
        "help": command.help,
        "short": command.get_short_help_str(),
        "params": [param.to_info_dict() for param in command.params],
    }
    if isinstance(command, click.Group):
        tree["commands"] = {name: command_tree(sub) for name, sub in sorted(command.commands.items())}
    return tree


def lazy_tree() -> dict[str, Any]:
    """Each top-level command looked up alone in a fresh lazy group (as one `episodic <command>` process does)."""
    tree = {}
    for name in COMMANDS:
        group = build_cli()
        with click.Context(group) as ctx:
            command = group.get_command(ctx, name)
        assert command is not None, name
        tree[name] = command_tree(command)
    return tree


def test_the_lazy_cli_has_every_command_option_and_help_of_the_eager_build() -> None:
    eager = build_cli(FEATURES)
    assert lazy_tree() == {name: command_tree(cmd) for name, cmd in sorted(eager.commands.items())}
    assert set(COMMANDS) == set(eager.commands)  # nothing the eager build has is missing from the table
    runner = CliRunner()
    assert runner.invoke(build_cli(), ["--help"]).output == runner.invoke(eager, ["--help"]).output
    for path in (
        ["hist"],  # an unknown name: "Did you mean 'history'?" needs every command
        ["setup", "--help"],
        ["hook", "--help"],
        ["history", "--help"],
        ["setup", "claude-code", "--help"],
    ):
        assert runner.invoke(build_cli(), path).output == runner.invoke(eager, path).output, path
    assert "Did you mean 'history'?" in runner.invoke(build_cli(), ["hist"]).output


# run in a fresh interpreter: mcp_cmds' groups are module-level, so another build in this process would
# already hold harvest's `setup aws` and `hook session-end` and hide a missing area
CONTRIBUTIONS = """
import importlib, json, sys
import click
from episodic.cli.lazy_group import AREAS

def tree(cmd):
    sub = cmd.commands.items() if isinstance(cmd, click.Group) else []
    return [cmd.name, sorted(p.name for p in cmd.params), [tree(c) for _, c in sorted(sub)]]

group, seen, made_by, added_by = click.Group(), {}, {}, {}
for area, reference in AREAS.items():
    module, _, function = reference.partition(":")
    getattr(importlib.import_module(module), function)(group)
    for name, command in group.commands.items():
        now = json.dumps(tree(command))
        if name not in seen:
            made_by[name] = area
        elif seen[name] != now:
            added_by.setdefault(name, []).append(area)
        seen[name] = now
json.dump({"made_by": made_by, "added_by": added_by}, sys.stdout)
"""


def test_the_table_names_every_area_that_builds_a_command_and_what_those_areas_need() -> None:
    env = {**os.environ, "PYTHONPATH": str(SHARED)}
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", CONTRIBUTIONS], capture_output=True, text=True, check=True, env=env
        ).stdout
    )
    made_by, added_by = found["made_by"], found["added_by"]
    assert set(made_by) == set(COMMANDS)
    for name, areas in COMMANDS.items():
        assert {made_by[name], *added_by.get(name, [])} <= set(areas), name
    # an area adding to another's group comes with that area wherever it is listed (any lookup order)
    for name, adders in added_by.items():
        for adder in adders:
            assert all(made_by[name] in areas for areas in COMMANDS.values() if adder in areas), (name, adder)
    features = {feature.cli.partition(":")[0] for feature in FEATURES if feature.cli}
    assert features == {
        ref.partition(":")[0] for ref in AREAS.values() if not ref.startswith("episodic.cli.")
    }


LOADED = """
import sys
from episodic.cli import main
sys.argv = ["episodic", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""

# what no local read command needs: other command areas, other features' services, AWS auth, the scrubber
NOT_FOR_A_READ = (
    "episodic.cli.mcp_cmds",
    "episodic.cli.harvest_cmds",
    "episodic.cli.eval_cmds",
    "episodic.cli.cards_cmds",
    "episodic.cli.ui_cmds",
    "episodic.history.service",
    "episodic.scratch.service",
    "episodic.failures.service",
    "episodic.aws.secrets_auth",
    "episodic.kernel.auth",
    "episodic.scrub",
    "episodic.distill.checks",
)


def loaded_modules(tmp_path: Path, *args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(SHARED), "EPISODIC_HOME": str(tmp_path / "home")}
    env.pop("EPISODIC_CONFIG", None)
    run = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=env, timeout=120
    )
    return set(run.stderr.splitlines())


def test_stats_imports_only_its_own_area(tmp_path: Path) -> None:
    loaded = loaded_modules(tmp_path, "stats")
    assert "episodic.cli.core_cmds" in loaded  # it did run
    assert sorted(m for m in loaded if m.startswith(NOT_FOR_A_READ)) == []


def test_show_assembles_a_memory_without_the_distiller_parsers_or_the_experiment(tmp_path: Path) -> None:
    # `show` assembles the whole memory: its distiller and transcript parsers are built at first use
    loaded = loaded_modules(tmp_path, "show", "no-such-session")
    assert "episodic.cli.core_cmds" in loaded and "episodic.kernel.memory" in loaded
    other = tuple(
        m for m in NOT_FOR_A_READ if m.startswith(("episodic.cli.", "episodic.aws", "episodic.kernel.auth"))
    )
    unneeded = (*other, "episodic.distill.heuristic", "episodic.parse.", "episodic.experiment.measures")
    assert sorted(m for m in loaded if m.startswith(unneeded)) == []


def test_setup_prints_without_the_store_numpy_or_the_card_checks(tmp_path: Path) -> None:
    loaded = loaded_modules(tmp_path, "setup", "claude-code", "--distiller", "heuristic")
    assert "episodic.cli.setup_clients" in loaded
    unneeded = (
        "numpy",
        "episodic.store",
        "episodic.distill.checks",
        "episodic.cli.core_cmds",
        "episodic.scrub",
    )
    assert sorted(m for m in loaded if m.startswith(unneeded)) == []
