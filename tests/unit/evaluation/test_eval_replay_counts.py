"""The replay's figures on a tiny hand-made set of prompts: per prompt, repeats in a session, hubs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from episodic.evaluation.replay import Given, ReplayedPrompt, spread, summarize_replay
from episodic.kernel.errors import InvalidArgumentError


def _row(session: str, index: int, *given: tuple[str, str]) -> ReplayedPrompt:
    hits = tuple(Given(sid, tier, 3.0, 0.6) for sid, tier in given)
    return ReplayedPrompt(session, index, "A", 10, hits, 500 if hits else 0)


ROWS = [
    _row("s1", 0, ("c1", "card"), ("c2", "pointer")),
    _row("s1", 1, ("c1", "card")),  # c1 a second time in s1, in full
    _row("s1", 2),
    _row("s2", 0, ("c2", "pointer"), ("c3", "pointer")),
    _row("s2", 3, ("c2", "card")),  # c2 twice in s2: a pointer, then a card
]


def test_figures_per_prompt() -> None:
    f = summarize_replay(ROWS)
    assert (f.prompts, f.sessions) == (5, 2)
    assert f.cards_per_prompt == pytest.approx(3 / 5)
    assert f.prompts_with_card == pytest.approx(3 / 5)
    assert f.pointers_per_prompt == pytest.approx(3 / 5)
    assert f.prompts_with_anything == pytest.approx(4 / 5)
    assert f.chars_per_prompt == pytest.approx(400.0)
    assert f.se_prompts_with_card == pytest.approx(((0.6 * 0.4 * 5 / 4) / 5) ** 0.5, abs=1e-4)


def test_repeats_in_a_session_and_hubs() -> None:
    f = summarize_replay(ROWS)
    assert f.card_repeats == 1  # (s1, c1) in full twice; c2 was a card once in s2
    assert f.repeats == 2  # (s1, c1) and (s2, c2)
    assert [(c.session_id, c.prompts, c.as_card) for c in f.top] == [("c2", 3, 1), ("c1", 2, 2), ("c3", 1, 0)]
    assert f.max_share == pytest.approx(3 / 5) and f.max_card_share == pytest.approx(2 / 5)
    assert f.cards_over_one_percent == 3


def test_nothing_replayed_is_all_zero() -> None:
    assert summarize_replay([]).prompts == 0


def test_spread_takes_sessions_evenly_over_the_timeline() -> None:
    order = [SimpleNamespace(session_id=f"s{i}") for i in range(10)]
    assert spread(order, None) == spread(order, 10) == {f"s{i}" for i in range(10)}  # type: ignore[arg-type]
    assert spread(order, 3) == {"s0", "s3", "s6"}  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        spread(order, 0)  # type: ignore[arg-type]
