"""Deep sleep on small hand-built weeks: each signal, the weights, the three gates, REM's grouping and
the noise filters (retries, loop ticks, one-off chatter)."""

from __future__ import annotations

from collections import Counter

import pytest
from episodic.dream.scoring import (
    WEIGHTS,
    PriorMemory,
    RecordedItem,
    WeekContext,
    conceptual_richness,
    explain,
    frequency,
    query_diversity,
    recency,
    relevance,
    score_thread,
)
from episodic.dream.threads import Thread, find_threads, pick_threads, split_noise
from episodic.dream.weeks import IsoWeek
from kits.dream_kit import digest, export_thread

W30 = IsoWeek(2026, 30)


def thread_of(sessions, terms=("export", "review", "transcript")) -> Thread:  # type: ignore[no-untyped-def]
    return Thread(number=1, sessions=list(sessions), terms=list(terms), label="export")


def ctx(sessions, prior: PriorMemory | None = None) -> WeekContext:  # type: ignore[no-untyped-def]
    return WeekContext(W30, Counter(d.record.project for d in sessions), prior or PriorMemory())


def test_the_weights_are_the_references_and_sum_to_one() -> None:
    assert WEIGHTS == {
        "relevance": 0.30,
        "frequency": 0.24,
        "recency": 0.15,
        "query_diversity": 0.15,
        "conceptual_richness": 0.10,
        "novelty": 0.06,
    }
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)


def test_frequency_saturates_at_four_sessions() -> None:
    sessions = export_thread(days=(20, 21, 22, 23, 24, 25))
    assert [frequency(thread_of(sessions[:n])).value for n in (1, 2, 4, 6)] == [0.25, 0.5, 1.0, 1.0]


def test_recency_is_how_late_in_the_week_the_latest_session_started() -> None:
    monday = digest("m1", "2026-07-20T00:00:00")
    thursday_noon = digest("t1", "2026-07-23T12:00:00")
    assert recency(thread_of([monday]), ctx([monday])).value == 0.0
    assert recency(thread_of([monday, thursday_noon]), ctx([monday])).value == 0.5


def test_query_diversity_counts_distinct_day_project_branch_contexts() -> None:
    same = [digest(f"s{n}", f"2026-07-21T0{n}:00:00", branch="b") for n in range(3)]
    two_days = [digest("a", "2026-07-21T10:00:00"), digest("b", "2026-07-22T10:00:00")]
    three = [*two_days, digest("c", "2026-07-22T11:00:00", project="site")]
    assert query_diversity(thread_of(same)).value == 0.0
    assert query_diversity(thread_of(two_days)).value == 0.5
    assert query_diversity(thread_of(three)).value == 1.0


def test_conceptual_richness_counts_distinct_tags() -> None:
    sessions = [
        digest("a", "2026-07-21T10:00:00", tags=["Go", "git"]),
        digest("b", "2026-07-22T10:00:00", tags=["go", "mise"]),
    ]
    signal = conceptual_richness(thread_of(sessions))
    assert signal.inputs["tags"] == ["git", "go", "mise"] and signal.value == 0.5


def test_relevance_weighs_project_centrality_and_open_work() -> None:
    week = [digest(f"x{n}", "2026-07-21T10:00:00", project="exporter") for n in range(4)]
    week += [digest(f"y{n}", "2026-07-21T10:00:00", project="site") for n in range(2)]
    central_done = thread_of(week[:2])
    side_open = thread_of([digest("y9", "2026-07-22T10:00:00", project="site", outcome="unverified")])
    assert relevance(central_done, ctx(week)).value == 0.6  # busiest project, all verified
    assert relevance(side_open, ctx(week)).value == pytest.approx(0.6 * 0.5 + 0.4)
    carried = PriorMemory(
        unfinished=[RecordedItem("2026-W29", "export", frozenset({"export", "review", "transcript"}))]
    )
    signal = relevance(central_done, ctx(week, carried))
    assert signal.value == 1.0 and signal.inputs["earlier_unfinished"].startswith("2026-W29")


def test_score_is_the_weighted_sum_and_all_three_gates_pass_for_a_recurring_new_thread() -> None:
    sessions = export_thread()
    scored = score_thread(thread_of(sessions), ctx(sessions))
    values = {s.name: s.value for s in scored.signals}
    assert values == {
        "relevance": 1.0,
        "frequency": 1.0,
        "recency": round(106 / 168, 3),
        "query_diversity": 1.0,
        "conceptual_richness": 1.0,
        "novelty": 1.0,
    }
    assert scored.score == round(sum(WEIGHTS[k] * v for k, v in values.items()), 3)
    assert scored.promoted and [g.name for g in scored.gates] == ["score", "sessions", "not_recorded"]


def test_one_session_fails_the_sessions_gate_whatever_its_score() -> None:
    one = [digest("solo", "2026-07-26T22:00:00", outcome="failed", tags=list("abcdef"))]
    scored = score_thread(thread_of(one), ctx(one))
    gates = {g.name: g.passed for g in scored.gates}
    assert gates == {"score": False, "sessions": False, "not_recorded": True}
    assert not scored.promoted


def test_a_low_score_fails_the_score_gate() -> None:
    sessions = [digest(f"s{n}", "2026-07-20T01:00:00", outcome="verified", tags=["go"]) for n in range(2)]
    week = sessions + [digest(f"o{n}", "2026-07-20T02:00:00", project="other") for n in range(6)]
    scored = score_thread(thread_of(sessions), ctx(week))
    assert scored.score < 0.7 and not next(g for g in scored.gates if g.name == "score").passed


def test_an_equivalent_earlier_theme_fails_the_not_recorded_gate_and_lowers_novelty() -> None:
    sessions = export_thread()
    prior = PriorMemory(
        themes=[RecordedItem("2026-W29", "**export**", frozenset({"export", "review", "transcript"}))]
    )
    scored = score_thread(thread_of(sessions), ctx(sessions, prior))
    assert next(s for s in scored.signals if s.name == "novelty").value == 0.0
    gate = next(g for g in scored.gates if g.name == "not_recorded")
    assert not gate.passed and "2026-W29" in gate.detail
    assert not scored.promoted and scored.score >= 0.7  # held back by the third gate alone


def test_explain_shows_every_signal_with_its_inputs_and_every_gate() -> None:
    sessions = export_thread()
    text = explain([score_thread(thread_of(sessions), ctx(sessions))])
    assert "PROMOTED" in text
    for name in WEIGHTS:
        assert name in text
    assert "sessions=4, saturation=4" in text and "latest_session=2026-07-24T10:00" in text
    assert text.count("gate ") == 3


def test_noise_filters_retries_loop_ticks_and_chatter() -> None:
    tick = "check the deploy queue and report"
    week = [
        digest("orig", "2026-07-21T10:00:00", prompts=["fix the flaky upload test", "more"], files=["a.py"]),
        digest("retry", "2026-07-21T10:30:00", prompts=["fix the flaky upload test"], files=["a.py"]),
        *[digest(f"tick{n}", f"2026-07-2{n + 1}T06:00:00", prompts=[tick]) for n in range(3)],
        digest("chat", "2026-07-22T09:00:00", prompts=["what does rebase do?"], outcome="informational"),
        digest("later", "2026-07-24T10:00:00", prompts=["the flaky upload test fails again"], files=["a.py"]),
    ]
    kept, noise = split_noise(week)
    assert [d.session_id for d in noise.retries] == ["retry"]
    assert [d.session_id for d in noise.loop_ticks] == ["tick0", "tick1", "tick2"]
    assert [d.session_id for d in noise.chatter] == ["chat"]
    assert [d.session_id for d in kept] == ["orig", "later"]  # the same work days later is recurrence


def test_threads_group_by_files_topic_and_branch_and_keep_unrelated_apart() -> None:
    week = [
        *export_thread(),
        digest(
            "css1",
            "2026-07-21T15:00:00",
            problem="diagram colours differ between pages",
            files=["site/theme.css"],
            project="site",
        ),
        digest(
            "css2",
            "2026-07-23T15:00:00",
            problem="rebuild diagram styling by hand",
            files=["site/theme.css"],
            project="site",
        ),
        digest(
            "solo",
            "2026-07-22T15:00:00",
            problem="upgrade the postgres driver",
            files=["db/driver.go"],
            project="db",
        ),
    ]
    threads, _ = find_threads(week)
    groups = sorted(sorted(t.session_ids) for t in threads)
    assert sorted(d.session_id for d in export_thread()) in groups
    assert ["css1", "css2"] in groups and ["solo"] in groups
    picked = pick_threads(threads)
    assert [len(t.sessions) for t in picked] == [4, 2, 1]
