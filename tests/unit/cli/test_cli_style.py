"""One CLI style, checked where a user meets it: every command at module level, every option with a help text,
every summary whole in `--help`, and docs/cli.md generated from the commands (stale: this fails)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner
from episodic.assembly.features import FEATURES
from episodic.cli import build_cli
from kits.script_kit import load_script

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "shared" / "episodic"
# the root group is built per call (lazy for a process, eager from the features for tests): its only nested one
BUILT_PER_CALL = {("episodic/cli/__init__.py", "build_cli")}
HELP_WIDTH = 80  # click's default help width: a summary must fit a terminal of this many columns


def nested_commands(root: Path) -> list[str]:
    """`module:function` for every click command or group defined inside a function."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = str(path.relative_to(root.parent))
        for outer in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
                or (name, outer.name) in BUILT_PER_CALL
            ):
                continue
            for inner in ast.walk(outer):
                is_function = inner is not outer and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
                if is_function and any(_is_command(decorator) for decorator in inner.decorator_list):
                    found.append(f"{name}:{inner.lineno} {inner.name} (in {outer.name})")
    return found


def _is_command(decorator: ast.expr) -> bool:
    call = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(call, ast.Attribute) and call.attr in ("command", "group")


def commands() -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every visible command of the eager build with the context `--help` renders it in."""

    def walk(
        command: click.Command, path: str, parent: click.Context | None
    ) -> Iterator[tuple[str, click.Command, click.Context]]:
        ctx = click.Context(
            command, info_name=path.rsplit(" ", 1)[-1], parent=parent, terminal_width=HELP_WIDTH
        )
        yield path, command, ctx
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    yield from walk(sub, f"{path} {name}", ctx)

    yield from walk(build_cli(FEATURES), "episodic", None)


def test_no_command_is_defined_inside_a_function() -> None:
    skeleton = REPO / "tests" / "fixtures" / "feature_skeleton"  # the feature a newcomer copies
    found = nested_commands(PACKAGE) + nested_commands(skeleton)
    assert not found, "define commands at module level and add them in register(): " + "; ".join(found)


def test_a_planted_nested_command_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "episodic"
    package.mkdir()
    (package / "cmds.py").write_text(
        "import click\n\n@click.command('ok')\ndef ok():\n    pass\n\n"
        "def register(group):\n    @group.command('inner')\n    def inner():\n        pass\n"
    )
    assert nested_commands(package) == ["episodic/cmds.py:9 inner (in register)"]


def test_a_feature_registers_its_commands_once() -> None:
    """Its feature.py names its `cli` and the `commands` it adds; the lazy group reads them from there."""
    lazy_group = (PACKAGE / "cli" / "lazy_group.py").read_text(encoding="utf-8")
    for feature in FEATURES:
        if feature.cli:
            assert feature.commands, f"{feature.name}: `cli` without the `commands` it adds"
            assert feature.cli.partition(":")[0] not in lazy_group, f"{feature.name} is registered twice"
            group = build_cli(FEATURES)
            with click.Context(group) as ctx:
                assert all(group.get_command(ctx, name) for name in feature.commands), feature.name


def test_every_option_has_help() -> None:
    missing = [
        f"{path} {'/'.join(param.opts)}"
        for path, command, _ in commands()
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    assert not missing, f"options without help=: {missing}"


def test_every_summary_fits_its_groups_help() -> None:
    cut = []
    for path, command, ctx in commands():
        if not isinstance(command, click.Group):
            continue
        help_text = command.get_help(ctx)
        listed = help_text.split("\nCommands:\n", 1)[-1].split("\n\n", 1)[0]
        cut += [f"{path}: {line.strip()}" for line in listed.splitlines() if line.rstrip().endswith("...")]
    assert not cut, "first help lines cut with '...' (make the first sentence short):\n" + "\n".join(cut)


def test_the_top_level_help_as_a_user_runs_it_shows_every_summary_whole() -> None:
    result = CliRunner().invoke(build_cli(), ["--help"], terminal_width=HELP_WIDTH)
    assert result.exit_code == 0 and "Commands:" in result.output
    assert "..." not in result.output.split("Commands:", 1)[1]


def generator() -> ModuleType:
    return load_script("gen_cli_docs")


def test_the_cli_reference_page_is_generated_from_the_commands() -> None:
    gen = generator()
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == gen.page(), "docs/cli.md is stale: run .venv/bin/python scripts/gen_cli_docs.py"
    for path, command, _ in commands():
        assert f"## `{path}`" in page and (command.help or "").split("\n")[0][:40] in page, path


@pytest.mark.parametrize("edit", ["an option renamed", "a command added"])
def test_a_stale_page_is_caught(edit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = generator()
    page = gen.page()
    stale = (
        page.replace("--tenant", "--owner", 1)
        if edit == "an option renamed"
        else page + "\n## `episodic x`\n"
    )
    monkeypatch.setattr(gen, "PAGE", tmp_path / "cli.md")
    (tmp_path / "cli.md").write_text(stale, encoding="utf-8")
    assert gen.main(["--check"]) == 1
    (tmp_path / "cli.md").write_text(page, encoding="utf-8")
    assert gen.main(["--check"]) == 0
