"""CLI errors are mapped once, by the `episodic` group (`cli/errors.py`): commands let typed errors rise."""

from __future__ import annotations

import ast
from pathlib import Path

import episodic.cli
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.kernel import errors

CLI_DIR = Path(episodic.cli.__file__).parent
MAPPING_MODULE = CLI_DIR / "errors.py"
# the command modules: cli/ and each feature's cli.py
COMMAND_MODULES = sorted({*CLI_DIR.glob("*.py"), *CLI_DIR.parent.glob("*/cli.py")} - {MAPPING_MODULE})
TYPED = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, errors.EpisodicError)}


def remapped_handlers(source: str) -> list[int]:
    """Lines of `except <typed error>` blocks that re-raise it as a click error (the group's job)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ExceptHandler) or node.type is None:
            continue
        caught = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
        if not caught & TYPED:
            continue
        raises = [n for n in ast.walk(node) if isinstance(n, ast.Raise) and n.exc is not None]
        if any("ClickException" in ast.unparse(r.exc) for r in raises if r.exc is not None):
            lines.append(node.lineno)
    return lines


def test_no_command_module_maps_typed_errors_again() -> None:
    assert len(COMMAND_MODULES) > 10
    found = {str(path): lines for path in COMMAND_MODULES if (lines := remapped_handlers(path.read_text()))}
    assert found == {}


def test_the_rule_finds_a_planted_mapping() -> None:
    planted = (
        "def f():\n    try:\n        g()\n    except EpisodicError as exc:\n"
        "        raise click.ClickException(str(exc)) from exc\n"
    )
    assert remapped_handlers(planted) == [4]
    assert remapped_handlers(MAPPING_MODULE.read_text())  # the one place that does map them


def test_a_typed_error_from_a_command_is_one_line_and_exit_1(episodic_home: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["token", "revoke", "no-such-id"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "no token" in result.output
    assert "Traceback" not in result.output
