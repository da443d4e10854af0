"""Quote the card rules and the outcome rule (the docstring of episodic/distill/checks.py) into docs/card.md.

The code states the rules once; the page quotes them between two markers, so they cannot drift.

    python scripts/gen_card_rules.py          # rewrite the quote in docs/card.md
    python scripts/gen_card_rules.py --check  # exit 1 when the page's quote is stale
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_page import write_or_check

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "shared" / "episodic" / "distill" / "checks.py"
PAGE = REPO / "docs" / "card.md"
BEGIN = (
    "<!-- quoted from episodic/distill/checks.py by scripts/gen_card_rules.py: edit the code, not this -->"
)
END = "<!-- end of the quote -->"


def quote() -> str:
    """The rules as the page shows them: the module's docstring, in a text block."""
    docstring = ast.get_docstring(ast.parse(SOURCE.read_text(encoding="utf-8")))
    assert docstring, f"{SOURCE} has no docstring"
    return f"{BEGIN}\n```text\n{docstring.strip()}\n```\n{END}"


def page_with_quote(page: str) -> str:
    """The page with its quote replaced by the code's current rules."""
    start, end = page.index(BEGIN), page.index(END) + len(END)
    return page[:start] + quote() + page[end:]


def main(argv: list[str] | None = None) -> int:
    return write_or_check(PAGE, page_with_quote, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
