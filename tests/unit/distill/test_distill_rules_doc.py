"""docs/card.md quotes the outcome rule and the card rules from the code (episodic/distill/checks.py), whole."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from kits.script_kit import load_script

REPO = Path(__file__).resolve().parents[3]


def generator() -> ModuleType:
    return load_script("gen_card_rules")


def test_the_card_page_quotes_the_rules_as_the_code_states_them() -> None:
    gen = generator()
    page = (REPO / "docs" / "card.md").read_text(encoding="utf-8")
    assert gen.page_with_quote(page) == page, "docs/card.md is stale: run python scripts/gen_card_rules.py"
    assert gen.main(["--check"]) == 0


def test_a_rule_edited_on_the_page_alone_is_stale() -> None:
    gen = generator()
    page = (REPO / "docs" / "card.md").read_text(encoding="utf-8")
    edited = page.replace("no evidence after the last edit → `unverified`", "no evidence → `verified`")
    assert edited != page
    assert gen.page_with_quote(edited) == page
