"""Issue 31: one planted token of every provider format in the scrubber's catalogue (`scrub/catalogue.py`),
raw, JSON-escaped, as an `ENV=` value and cut by a line break; each must go whole. A row with no planted
token fails `test_every_catalogue_row_has_a_planted_token`, so the README's list and this table stay one.

The tokens come from `tests/kits/secret_kit.py` (seeded random bodies, so no secret scanner flags a file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from episodic.scrub import KINDS, Scrubber, default_scrubber
from episodic.scrub.catalogue import CATALOGUE
from kits.secret_kit import TOKENS

_KIND = {row.provider: row.kind for row in CATALOGUE}


def _contexts(token: str) -> list[str]:
    return [
        f"the deploy used {token} and then failed",
        json.dumps({"command": f"export SERVICE_CREDENTIAL_X={token}; ./deploy"})[1:-1],
        f"ENV_VALUE={token}",
        f'"value": "{token}",',
        f"pasted:\n{token}\nthat was it",
    ]


def _cut_by_line_break(token: str) -> list[str]:
    middle = len(token) // 2
    return [
        f"here: {token[:middle]}\n{token[middle:]} done",
        f"here: {token[:middle]}\\n{token[middle:]} done",
    ]


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return default_scrubber()


def test_every_catalogue_row_has_a_planted_token() -> None:
    planted = {provider for provider, _ in TOKENS}
    assert {row.provider for row in CATALOGUE} - planted == set()
    assert planted - {row.provider for row in CATALOGUE} == set()
    assert {row.kind for row in CATALOGUE} <= set(KINDS)
    for row in CATALOGUE:
        assert all(row.literals), row  # every row has a trigger literal: no regex runs over whole texts
        assert re.compile(row.regex).groups == 0 or "secret" in re.compile(row.regex).groupindex


@pytest.mark.parametrize(("provider", "token"), TOKENS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(TOKENS)])
def test_planted_catalogue_token_goes_whole(scrubber: Scrubber, provider: str, token: str) -> None:
    slow = Scrubber(accelerated=False)
    for text in _contexts(token):
        clean, counts = scrubber.scrub_counted(text)
        assert token[6:] not in clean and token[-12:] not in clean, (provider, clean)
        assert counts, text
        assert slow.scrub_counted(text) == (clean, counts)
        assert scrubber.scrub(clean) == clean
    clean, counts = scrubber.scrub_counted(_contexts(token)[0])
    assert clean == f"the deploy used [REDACTED:{_KIND[provider]}] and then failed"
    for text in _cut_by_line_break(token):
        clean = scrubber.scrub(text)
        assert clean.startswith("here: [REDACTED:") and clean.endswith("] done"), (provider, clean)
    assert scrubber.internal_errors == 0


NOT_TOKENS = [
    "SKIP_TESTS=1 and SKU_COUNT=3, DISK usage, the TASK_ID",
    "dapi is the name of the Databricks API client; rapidapi.com is a site",
    "hvs. is a prefix and shp files are shapes; lin_api_version=2",
    "r8_config and gsk_ok and xai-sdk and pul-request, sq0 x",
    "the key 3f786850e387550fdab836ed7e6dc881de23001b3f786850e387550fdab8 is a sha",
    "SK" + "0123456789abcdef" * 2 + "01 is 34 hex, one too many",
]


@pytest.mark.parametrize("text", NOT_TOKENS)
def test_near_misses_are_left_alone(scrubber: Scrubber, text: str) -> None:
    assert scrubber.scrub(text) == text


def test_the_docs_list_every_catalogue_row() -> None:
    readme = (Path(__file__).resolve().parents[3] / "docs" / "security.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Covered formats and how the list is kept current") :]
    section = " ".join(section[: section.index("\n## ")].split())  # names may wrap across lines
    missing = [row.provider for row in CATALOGUE if row.provider not in section]
    missing += [
        f"{row.provider} {literal}"
        for row in CATALOGUE
        for literal in row.literals
        if literal.strip("._-~") not in section
    ]
    assert missing == []
