"""The base64 runs the scrubber reads (bare AWS secrets, Discord bot tokens, base64 of text) are found two ways
with the same result (issue 52): Hyperscan's candidates (companions.RUN_PATTERNS) and the walk over every run."""

from __future__ import annotations

import base64
import random
import string

import pytest
from episodic.scrub.companions import BASE64_MARKS, BASE64_TEXT_MIN, base64_runs, candidate_runs, run_secrets
from episodic.scrub.engine import hyperscan_available
from episodic.scrub.scrubber import RUNS_SEARCHED_BELOW, Scrubber
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="the candidates come from Hyperscan")

_B64 = string.ascii_letters + string.digits + "+/"
_RNG = random.Random(52)


def _run(length: int, alphabet: str = _B64) -> str:
    return "".join(_RNG.choices(alphabet, k=length))


_DISCORD = (
    "MTA"
    + _run(22, string.ascii_letters + string.digits)
    + "."
    + _run(6).replace("+", "_").replace("/", "-")
    + "."
    + _run(27, string.ascii_letters + string.digits + "_-")
)
_PIECES = [
    *(_run(n) for n in (23, 24, 25, 26, 27, 32, 39, 40, 41, 42, 64)),
    *(_run(n, string.ascii_lowercase + "/") for n in (24, 40)),  # paths: no upper case
    base64.b64encode(b"API_TOKEN=ghp_" + b"a1B2c3D4e5" * 4).decode(),
    base64.b64encode(b"password: hunter2hunter2 and more text here").decode(),
    base64.b64encode(b"export STRIPE=sk_live_" + b"x9Y8z7W6v5" * 3).decode()[:-2],
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ1w2E3r4T5y",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ1w2E3r4T",
    _DISCORD,
    _DISCORD[1:],
]
_GLUE = ["", " ", "\\n", "\\t", "\\", "n", "-", "_", "=", "==", ".", "é", "中", "\ud800", '"', "/", "AKIA"]
_TEXTS = st.lists(st.one_of(st.sampled_from(_PIECES), st.sampled_from(_GLUE)), max_size=12).map("".join)
_SEARCH = Scrubber(engine="hyperscan")._t.search


def _both(text: str) -> tuple[object, object]:
    data = text.encode("ascii", "replace")
    walked = run_secrets(text, data, base64_runs(data, data.translate(BASE64_MARKS)), bare=True, decode=True)
    _hits, starts = _SEARCH.scan(text, data)
    if starts is None:  # a text too short for any run, or long enough to be walked
        assert len(text) < BASE64_TEXT_MIN or len(text) >= RUNS_SEARCHED_BELOW
        starts = []
    found = run_secrets(text, data, candidate_runs(data, starts), bare=True, decode=True)
    return walked, found


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
@example("\\n" + _PIECES[-3])  # a bare AWS secret after an escaped break
@example(_DISCORD + " " + _PIECES[-5])
def test_the_candidates_find_what_the_walk_finds(text: str) -> None:
    walked, found = _both(text)
    assert found == walked


def test_each_rule_is_found_through_the_candidates() -> None:
    walked, found = _both(" ".join(_PIECES))
    spans, texts = found  # type: ignore[misc]
    kinds = sorted(span[2] for span in spans)
    assert kinds == ["aws-secret-key", "aws-secret-key", "discord-bot-token"]
    assert len(texts) >= 3
    assert found == walked
