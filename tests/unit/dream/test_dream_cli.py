"""`episodic dream`'s output: a quiet stretch of weeks is one line, and --keep-survey says when it kept none."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.dream.cli import empty_runs


def test_consecutive_empty_weeks_are_one_run_and_a_gap_starts_another() -> None:
    weeks = ["2026-W08", "2026-W09", "2026-W10", "2026-W12", "2026-W53", "2027-W01"]
    assert empty_runs(weeks) == [
        ("2026-W08", "2026-W10", 3),
        ("2026-W12", "2026-W12", 1),
        ("2026-W53", "2027-W01", 2),  # 2026 has 53 ISO weeks
    ]
    assert empty_runs([]) == []


def test_keep_survey_with_nothing_to_dream_says_no_survey_was_kept(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    from episodic.dream.archive import LocalArchive
    from episodic.dream.weeks import last_complete_week

    (episodic_home / "index.sqlite3").write_bytes(b"")  # an index exists; the last record is recent
    LocalArchive(episodic_home / "dreams").write(
        "local", last_complete_week(datetime.now(UTC)), "record", "---\nweek: x\nsessions_analysed: 3\n---\n"
    )
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    result = CliRunner().invoke(
        build_cli(), ["dream", "--keep-survey", "--offline"]
    )  # the newest week is recorded
    assert "nothing to dream" in result.output and "no survey kept" in result.output, result.output
