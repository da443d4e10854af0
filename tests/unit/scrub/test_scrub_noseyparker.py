"""The rows generated from Nosey Parker's catalogue (issue 40), each against that catalogue's own examples:
every true example is found by its rule through the scrubber's trigger search and its secret redacted, and
no false example is found by its rule. Plus: the data file is what the generator makes of the pinned
catalogue (when a copy of it is on this machine), and every rule left out says why."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from episodic.scrub import default_scrubber
from episodic.scrub.noseyparker import LiteralRules, catalogue_source, literal_rules, secret_span
from episodic.scrub.values import is_placeholder

REPO = Path(__file__).resolve().parents[3]
# a copy of the pinned catalogue (a git directory or checkout), named by the environment when one is at hand
MIRROR = Path(os.environ.get("EPISODIC_NOSEYPARKER_REPO", REPO / "build" / "noseyparker"))


@cache
def _data(name: str) -> dict[str, Any]:
    raw = resources.files("episodic.scrub").joinpath(f"data/{name}").read_text()
    return json.loads(raw)  # type: ignore[no-any-return]


def _rows() -> list[dict[str, Any]]:
    return list(_data("noseyparker_rules.json")["rules"])


def _examples(rule_id: str, which: str) -> list[str]:
    encoded = _data("noseyparker_examples.json")["examples"][rule_id][which]
    return [base64.b64decode(e).decode() for e in encoded]


def test_the_catalogue_is_taken_whole_with_a_reason_for_every_rule_left_out() -> None:
    data = _data("noseyparker_rules.json")
    assert catalogue_source()["commit"] and "Apache-2.0" in catalogue_source()["license"]
    assert len(data["rules"]) >= 130
    assert all(row["reason"] for row in data["skipped"])
    assert (
        len(data["rules"]) + len(data["skipped"]) == 189
    )  # every rule of the pinned commit is accounted for
    assert (REPO / "shared/episodic/scrub/data/NOTICE-noseyparker.txt").is_file()


@pytest.mark.parametrize("row", _rows(), ids=[row["id"] for row in _rows()])
def test_each_rule_redacts_its_true_examples(row: dict[str, Any]) -> None:
    pattern = re.compile(row["pattern"])
    scrubber = default_scrubber()
    examples = _examples(row["id"], "examples")
    assert examples, row["id"]
    for example in examples:
        match = pattern.search(example)
        assert match is not None, (row["id"], example)
        secret = example[slice(*secret_span(match, row["groups"]))]
        if is_placeholder(secret):
            continue  # `aaaa…`, `${VAR}`: a stand-in, which the scrubber keeps by design (values.is_placeholder)
        clean = scrubber.scrub(example)
        assert "[REDACTED:" in clean, (row["id"], example)
        alone = re.compile(r"(?<![A-Za-z0-9])" + re.escape(secret) + r"(?![A-Za-z0-9])")  # not inside a word
        assert alone.search(clean) is None, (row["id"], example, clean)


@pytest.mark.parametrize(
    "row",
    [row for row in _rows() if _examples(row["id"], "negative_examples")],
    ids=[row["id"] for row in _rows() if _examples(row["id"], "negative_examples")],
)
def test_no_rule_finds_its_false_examples(row: dict[str, Any]) -> None:
    handlers = {literal: handler for literal, handler in literal_rules()}
    for example in _examples(row["id"], "negative_examples"):
        for literal in row["triggers"]:
            own = LiteralRules(tuple(r for r in handlers[literal].rules if r.rule_id == row["id"]))
            at = example.lower().find(literal)
            while at >= 0:
                assert own(example, at) is None, (row["id"], example)
                at = example.lower().find(literal, at + 1)


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no copy of the pinned Nosey Parker catalogue here")
def test_the_data_file_is_what_the_generator_makes_of_the_pinned_commit(tmp_path: Path) -> None:
    commit = catalogue_source()["commit"]
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts/gen_scrub_catalogue.py"), "--repo", str(MIRROR), "--commit", commit,
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("noseyparker_rules.json", "noseyparker_examples.json"):
        assert json.loads((tmp_path / name).read_text()) == _data(name), name


def test_each_linear_rewrite_matches_exactly_the_texts_of_the_construct_it_replaces() -> None:
    # the generator writes catastrophic-backtracking constructs of the catalogue unambiguously (a failed
    # phpmailer match took seconds); the same language: every text of up to 7 of these characters agrees
    from scripts.gen_scrub_catalogue import LINEAR

    alphabet = [" ", "\t", "\r", "\n", "a", "$"]
    texts = [""]
    for length in range(7):  # the texts one character longer than the longest so far
        texts += [t + c for t in texts[-(len(alphabet) ** length) :] for c in alphabet]
    for slow, linear in LINEAR.items():
        before, after = re.compile(slow), re.compile(linear)
        assert all(bool(before.fullmatch(t)) == bool(after.fullmatch(t)) for t in texts), slow
        assert not any(slow in row["pattern"] for row in _rows())  # the data file holds the rewrite
