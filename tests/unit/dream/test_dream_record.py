"""The record format (front matter, fixed sections, citations) both ways, the exemplar, and the weeks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from episodic.dream.exemplar import DEFAULT_EXEMPLAR, load_exemplar, parse_exemplar
from episodic.dream.record import (
    SECTIONS,
    Citation,
    DreamRecord,
    Item,
    parse_record,
    render_record,
    section_items,
)
from episodic.dream.weeks import IsoWeek, last_complete_week, resolve_weeks
from episodic.kernel.errors import ConfigError, InvalidArgumentError


def record() -> DreamRecord:
    cite = Citation(session_id="abcdef12-3456", day="2026-07-21")
    return DreamRecord(
        week="2026-W30",
        period="2026-07-20 to 2026-07-26",
        sessions_analysed=3,
        mode="offline",
        generated_at="2026-08-01T00:00:00+00:00",
        input_range="2026-07-20T00:00:00+00:00 to 2026-07-27T00:00:00+00:00 (exclusive)",
        sections={
            "themes": [Item(text="**Export**: terms export, review; 3 sessions", cites=[cite], score=0.81)],
            "decisions": [Item(text="ship as one pull request", cites=[cite], day="2026-07-21")],
            "flags": [Item(text="first", cites=[cite]), Item(text="second", cites=[cite])],
        },
        counters={"claims": 4},
        sessions={"abcdef12": "abcdef12-3456"},
    )


def test_render_has_the_front_matter_and_every_fixed_section_in_order() -> None:
    text = render_record(record())
    assert text.startswith("---\nweek: 2026-W30\nperiod: 2026-07-20 to 2026-07-26\nsessions_analysed: 3\n")
    assert "type: dreaming-cycle" in text and "Offline record" in text
    positions = [text.index(f"## {title}") for _, title in SECTIONS]
    assert positions == sorted(positions)
    assert "- 2026-07-21: ship as one pull request [abcdef12 2026-07-21]" in text
    assert "(score 0.81) [abcdef12 2026-07-21]" in text
    assert "1. first [abcdef12 2026-07-21]\n2. second" in text  # flags are numbered


def test_the_front_matter_is_valid_yaml() -> None:
    import yaml

    front = render_record(record()).split("---\n")[1]
    loaded = yaml.safe_load(front)
    assert loaded["week"] == "2026-W30" and loaded["sessions_analysed"] == 3
    assert loaded["type"] == "dreaming-cycle" and loaded["input_range"].endswith("(exclusive)")


def test_parse_reads_back_front_matter_sections_and_citations() -> None:
    parsed = parse_record(render_record(record()))
    assert parsed.week == "2026-W30" and parsed.front["type"] == "dreaming-cycle"
    assert section_items(parsed, "risks") == []  # "None this week." is no claim
    assert section_items(parsed, "flags") == ["first [abcdef12 2026-07-21]", "second [abcdef12 2026-07-21]"]
    assert set(parsed.citations()) == {("abcdef12", "2026-07-21")}
    assert parsed.cited_sessions() == {"abcdef12": "abcdef12-3456"}


def test_the_exemplar_sets_headings_and_density() -> None:
    default = load_exemplar(None)
    assert set(default.headings) == {k for k, _ in SECTIONS}
    assert default.cap("decisions") == 6 and default.cap("flags") == 4
    lean = DEFAULT_EXEMPLAR.replace("## Risks", "## What could bite us (risks)")
    parsed = parse_exemplar(lean)
    assert parsed.headings["risks"] == "What could bite us (risks)"
    text = render_record(record(), parsed.headings)
    assert "## What could bite us (risks)" in text
    assert "risks" in parse_record(text, parsed.headings).sections


def test_an_exemplar_without_a_fixed_section_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "exemplar.md"
    path.write_text(DEFAULT_EXEMPLAR.replace("## Unfinished Threads", "## Misc"), encoding="utf-8")
    with pytest.raises(ConfigError, match="Unfinished Threads"):
        load_exemplar(str(path))
    with pytest.raises(ConfigError, match="cannot read"):
        load_exemplar(str(tmp_path / "missing.md"))


def test_iso_weeks() -> None:
    week = IsoWeek.parse("2026-W30")
    assert str(week) == "2026-W30" and week.period == "2026-07-20 to 2026-07-26"
    assert week.since == datetime(2026, 7, 20, tzinfo=UTC) and week.until == datetime(2026, 7, 27, tzinfo=UTC)
    assert str(IsoWeek.parse("2026-W53").next()) == "2027-W01"  # 2026 has 53 ISO weeks
    for bad in ("2026-30", "2026-W54", "W30"):
        with pytest.raises(InvalidArgumentError):
            IsoWeek.parse(bad)
    assert str(last_complete_week(datetime(2026, 7, 29, 12, tzinfo=UTC))) == "2026-W30"


def test_the_default_range_runs_from_the_last_record_to_the_last_complete_week() -> None:
    now = datetime(2026, 8, 12, tzinfo=UTC)  # a Wednesday of W33: W32 is the last complete week
    gap = resolve_weeks(
        week=None, since=None, until=None, recorded=[IsoWeek(2026, 29)], first_session=None, now=now
    )
    assert [str(w) for w in gap] == ["2026-W30", "2026-W31", "2026-W32"]  # one record per week
    first = resolve_weeks(
        week=None,
        since=None,
        until=None,
        recorded=[],
        first_session=datetime(2026, 8, 1, tzinfo=UTC),
        now=now,
    )
    assert [str(w) for w in first] == ["2026-W31", "2026-W32"]
    span = resolve_weeks(
        week=None, since="2026-07-22", until="2026-08-03", recorded=[], first_session=None, now=now
    )
    assert [str(w) for w in span] == ["2026-W30", "2026-W31", "2026-W32"]
    with pytest.raises(InvalidArgumentError, match="not both"):
        resolve_weeks(
            week="2026-W30", since="2026-07-22", until=None, recorded=[], first_session=None, now=now
        )
    with pytest.raises(InvalidArgumentError, match="go together"):
        resolve_weeks(week=None, since="2026-07-22", until=None, recorded=[], first_session=None, now=now)


def test_the_statistics_are_an_appendix_after_the_sections() -> None:
    built = record()
    cite = Citation(session_id="abcdef12-3456", day="2026-07-21")
    built.statistics = [Item(text="3 sessions across 1 project(s); outcomes: 3 verified.", cites=[cite])]
    text = render_record(built)
    assert (
        text.index("## Flags for Review")
        < text.index("## Appendix: Statistics")
        < text.index("## Sessions Cited")
    )
    parsed = parse_record(text)
    assert parsed.sections["statistics"] == [
        "- 3 sessions across 1 project(s); outcomes: 3 verified. [abcdef12 2026-07-21]"
    ]
    assert "sessions across" not in " ".join(parsed.sections["narrative"])
