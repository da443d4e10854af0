"""docs/architecture.md's path of a prompt: every hop names a module and a function that exist, in order from
the hook process to the card and back, so the list cannot silently go stale after a rename."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
SECTION = "## The path of a prompt (prompt → card)"
HOP = re.compile(r"^(\d+)\. `(episodic\.[\w.]+)`", re.MULTILINE)
NAMED = re.compile(r"`(episodic\.[\w.]+)`")
# what a prompt crosses, in this order: the list must keep each of these concerns
CONCERNS = ("hooks", "mcp", "core", "store", "core", "cards", "hooks")


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end > 0 else None]


def resolve(dotted: str) -> Any:
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(dotted)


def hops() -> list[tuple[int, str]]:
    return [(int(number), name) for number, name in HOP.findall(section())]


def test_the_hops_are_numbered_in_order_and_each_is_a_function() -> None:
    found = hops()
    assert [number for number, _ in found] == list(range(1, len(found) + 1)) and len(found) >= 10
    for number, name in found:
        assert callable(resolve(name)), f"hop {number}: {name} is not a function"


@pytest.mark.parametrize("name", sorted(set(NAMED.findall(section()))))
def test_every_name_in_the_path_exists(name: str) -> None:
    resolve(name)


def test_the_path_crosses_the_concerns_in_order() -> None:
    concerns = [name.split(".")[1] for _, name in hops()]
    walked = iter(concerns)
    assert all(concern in walked for concern in CONCERNS), concerns
    assert "episodic.judge.reranker.LocalReranker.rerank" in NAMED.findall(section())  # the second stage


def test_a_renamed_function_is_caught() -> None:
    with pytest.raises(AttributeError):
        resolve("episodic.hooks.server_client.ask_the_server")
    with pytest.raises((AttributeError, ModuleNotFoundError)):
        resolve("episodic.hooks.client_of_server.ask_server")
