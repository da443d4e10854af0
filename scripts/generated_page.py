"""A docs page generated from the code: write it, or (`--check`) exit 1 when the committed page is stale."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def write_or_check(page: Path, fresh: Callable[[str], str], description: str, argv: list[str] | None) -> int:
    """`fresh(current page text)` is the page as the code says it; the script's command line picks the action."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {page.name} is stale")
    args = parser.parse_args(argv)
    current = page.read_text(encoding="utf-8") if page.is_file() else ""
    wanted = fresh(current)
    if args.check:
        if current != wanted:
            print(f"{page} is stale: run the script that writes it ({description})")
            return 1
        return 0
    page.write_text(wanted, encoding="utf-8")
    return 0
