"""Work items: what a user may name, and what is detected in branches, prompts and commands."""

from __future__ import annotations

import pytest
from episodic.history.links import detect_items, parse_item
from episodic.kernel.errors import InvalidArgumentError
from kits.history_kit import record


@pytest.mark.parametrize(
    ("raw", "key", "kind"),
    [
        ("#123", "#123", "github"),
        ("acme/shop#7", "acme/shop#7", "github"),
        ("https://github.com/entireio/cli/pull/102", "entireio/cli#102", "github"),
        ("https://github.com/go-git/go-git/issues/970/", "go-git/go-git#970", "github"),
        ("ENT-297", "ENT-297", "jira"),
        ("ent-297", "ENT-297", "jira"),
        ("bd-a1b2", "bd-a1b2", "beads"),
        ("spotter-dov", "spotter-dov", "beads"),
    ],
)
def test_items_in_normal_form(raw: str, key: str, kind: str) -> None:
    item = parse_item(raw)
    assert (item.key, item.kind) == (key, kind)


@pytest.mark.parametrize("raw", ["", "hello world", "https://example.com/x", "#", "ENT 297"])
def test_not_an_item_is_a_clear_error(raw: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a work item"):
        parse_item(raw)


@pytest.mark.parametrize(
    ("branch", "found"),
    [
        ("alex/ent-297-fix-subagent-only-changes-checkpointing", ["ENT-297"]),
        ("ENT-12", ["ENT-12"]),
        ("issue-45-flaky", ["#45"]),
        ("soph/list-command", []),
        ("20260205-strict-settings-parsing", []),
        ("claude/setup-dns-mise-xqmU7", []),
        ("main", []),
    ],
)
def test_keys_detected_in_branch_names(branch: str, found: list[str]) -> None:
    r = record("alpha", "s1", "2026-01-01", ["hello"], git_branch=branch)
    assert [item.key for item, _ in detect_items(r)] == found


def test_prompts_and_commands_detected_once_each_and_encodings_are_not_keys() -> None:
    r = record(
        "alpha",
        "s1",
        "2026-01-01",
        ["review https://github.com/entireio/cli/pull/102 for ENT-221 (UTF-8, SHA-256)", "ENT-221 again"],
    )
    found = detect_items(r, ["bd show spotter-dov", "bd close spotter-dov", "ls"])
    assert [(i.key, e) for i, e in found] == [
        ("entireio/cli#102", "prompt"),
        ("ENT-221", "prompt"),
        ("spotter-dov", "command"),
    ]
    assert found[0][0].url == "https://github.com/entireio/cli/pull/102"
