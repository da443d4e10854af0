"""Write docs/cli.md, the CLI reference, from the commands themselves: every command's `--help`, as a user sees it.

python scripts/gen_cli_docs.py          # rewrite docs/cli.md
python scripts/gen_cli_docs.py --check  # exit 1 when docs/cli.md is stale (tests/unit/cli/test_cli_docs.py)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_page import write_or_check

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "cli.md"
WIDTH = 100  # the help text's width on the page (terminals wrap at their own)
HEADER = """# CLI reference

Every `episodic` command's `--help`, generated from the commands by `scripts/gen_cli_docs.py` (a test fails when
this page is stale: edit the command, then run the script). Hidden commands (run by the hooks themselves) are left out.
"""


def commands(
    command: click.Command, path: list[str], parent: click.Context | None
) -> Iterator[tuple[str, str]]:
    """(`episodic …`, its help text) for the command and every visible subcommand, depth first, by name."""
    ctx = click.Context(
        command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, [*path, name], ctx)


def page() -> str:
    """The reference page, as markdown: one section a command, its help in a text block."""
    from episodic.assembly.features import FEATURES
    from episodic.cli import build_cli

    sections = [HEADER]
    for name, text in commands(build_cli(FEATURES), ["episodic"], None):
        sections.append(f"## `{name}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(PAGE, lambda _current: page(), __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
