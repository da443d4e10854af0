"""docs/card.md quotes the outcome rule and the card rules from the code (episodic/distill/checks.py), whole."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_card_rules", REPO / "scripts" / "gen_card_rules.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
