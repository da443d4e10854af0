"""Metric arithmetic on hand-made rankings, and the two-standard-error rule for winners and ties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from episodic.evaluation.metrics import (
    compare,
    compare_all,
    mean_reciprocal_rank,
    rank_of,
    recall_at,
    summarize,
)
from episodic.evaluation.systems.base import rank_by_scores


def test_rank_of_is_one_based_and_none_when_absent() -> None:
    ranking = ["a", "b", "c"]
    assert rank_of("a", ranking) == 1
    assert rank_of("c", ranking) == 3
    assert rank_of("z", ranking) is None
    assert rank_of("a", []) is None


def test_recall_and_mrr_on_hand_made_ranks() -> None:
    # targets at ranks 1, 2, 4, missed, 1 → recall@1 = 2/5, recall@3 = 3/5, MRR = (1 + 1/2 + 1/4 + 0 + 1) / 5
    ranks = [1, 2, 4, None, 1]
    p1, se1 = recall_at(ranks, 1)
    p3, se3 = recall_at(ranks, 3)
    assert p1 == pytest.approx(0.4)
    assert se1 == pytest.approx(math.sqrt(0.4 * 0.6 / 5))
    assert p3 == pytest.approx(0.6)
    assert se3 == pytest.approx(math.sqrt(0.6 * 0.4 / 5))
    mrr, se_mrr = mean_reciprocal_rank(ranks)
    values = [1, 0.5, 0.25, 0, 1]
    mean = sum(values) / 5
    assert mrr == pytest.approx(2.75 / 5)
    assert se_mrr == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / 4 / 5))


def test_perfect_and_empty_runs_have_zero_standard_error() -> None:
    m = summarize([1, 1, 1], 3)
    assert (m.recall_at_1, m.recall_at_k, m.mrr) == (1.0, 1.0, 1.0)
    assert (m.se_recall_at_1, m.se_recall_at_k, m.se_mrr) == (0.0, 0.0, 0.0)
    empty = summarize([], 3)
    assert empty.n == 0 and empty.recall_at_k == 0.0


def test_json_shape_uses_the_real_k() -> None:
    data = summarize([1, 5, None, 2], 5).as_json()
    assert set(data) == {"recall@1", "recall@5", "mrr", "n", "se"}
    assert set(data["se"]) == {"recall@1", "recall@5", "mrr"}  # type: ignore[arg-type]
    assert data["recall@5"] == 0.75 and data["n"] == 4


def test_close_systems_are_a_tie_not_a_winner() -> None:
    # 12/20 vs 10/20: difference 0.10, SE of difference sqrt(.6*.4/20 + .5*.5/20) ≈ 0.157 → tie
    a = summarize([1] * 12 + [None] * 8, 3)
    b = summarize([1] * 10 + [None] * 10, 3)
    result = compare("a", a, "b", b)
    assert result.difference == pytest.approx(0.10)
    assert result.se_difference == pytest.approx(math.sqrt(0.6 * 0.4 / 20 + 0.25 / 20))
    assert result.winner is None
    assert "tie" in result.statement


def test_a_gap_of_two_standard_errors_names_a_winner() -> None:
    # 18/20 vs 6/20: difference 0.6, SE ≈ 0.124 → 0.6 ≥ 0.248: a winner, whichever side is passed first
    a = summarize([2] * 18 + [None] * 2, 3)
    b = summarize([2] * 6 + [None] * 14, 3)
    assert compare("a", a, "b", b).winner == "a"
    assert compare("b", b, "a", a).winner == "a"
    assert "a beats b" in compare("b", b, "a", a).statement


def test_the_rule_sits_exactly_at_two_standard_errors() -> None:
    a = summarize([1] * 7 + [None] * 3, 3)
    b = summarize([1] * 3 + [None] * 7, 3)
    result = compare("a", a, "b", b)
    # Δ = 0.4, 2·SE = 2·sqrt(2·0.21/10) ≈ 0.41 → just short of two standard errors: a tie
    assert 2 * result.se_difference > result.difference
    assert result.winner is None


def test_equal_systems_tie_even_with_zero_error() -> None:
    perfect = summarize([1, 1], 3)
    assert compare("a", perfect, "b", perfect).winner is None
    nothing = summarize([None, None], 3)
    assert compare("a", perfect, "b", nothing).winner == "a"


def test_compare_all_puts_the_better_system_first() -> None:
    metrics = {
        "weak": summarize([None] * 9 + [1], 3),
        "strong": summarize([1] * 10, 3),
        "mid": summarize([1] * 5 + [None] * 5, 3),
    }
    pairs = compare_all(metrics)
    assert [(c.a, c.b) for c in pairs] == [("strong", "mid"), ("strong", "weak"), ("mid", "weak")]


def test_tied_scores_keep_a_stable_order_and_masked_ids_drop_out() -> None:
    ids = ["s1", "s2", "s3", "s4"]
    scores = np.array([0.5, 0.9, 0.5, 0.0])
    assert rank_by_scores(ids, scores) == ["s2", "s1", "s3", "s4"]
    assert rank_by_scores(ids, scores, keep=scores > 0) == ["s2", "s1", "s3"]
