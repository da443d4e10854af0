"""`episodic experiment report` with the injection records: held-out sessions against sessions given memory,
and those that used it against those that ignored it, each with a standard error, and how many sessions per
arm the experiment needs before it can tell a difference that matters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodic.experiment.given import sessions_needed
from episodic.injections.sqlite_store import INJECTIONS_FILE, SQLiteInjectionStore
from fakes.injection_records import given_record
from test_experiment_report import BAD, GOOD, ids_in_arms, log_sessions, report_cli, write_arm


def given(store: SQLiteInjectionStore, session_id: str, use: str) -> None:
    record = given_record("local", session_id, "old-episode-1")
    store.add("local", [record])
    store.set_uses("local", session_id, {record.record_id: (use, "", "claude-code")})  # type: ignore[dict-item]


def test_the_report_reads_the_records_with_standard_errors(episodic_home: Path, tmp_path: Path) -> None:
    arms = ids_in_arms(12, 6)
    folder = tmp_path / "projects" / "-home-dev-shop"
    write_arm(folder, arms["with"], 9, GOOD, BAD)  # the first 9 verified: those used what they got
    write_arm(folder, arms["without"], 2, GOOD, BAD)
    log_sessions(episodic_home, arms["with"] + arms["without"])
    store = SQLiteInjectionStore(episodic_home / INJECTIONS_FILE)
    for n, sid in enumerate(arms["with"]):
        given(store, sid, "acted" if n < 9 else "ignored")
    store.close()

    report = json.loads(report_cli(episodic_home, folder.parent, "--json"))["given"]
    assert report["sessions"] == {"held out": 6, "given memory": 12, "used it": 9, "ignored it": 3}
    verified = next(r for r in report["measures"] if r["name"] == "verified")
    assert verified["groups"]["used it"]["mean"] == pytest.approx(1.0)
    assert verified["groups"]["ignored it"]["mean"] == pytest.approx(0.0)
    held = verified["groups"]["held out"]
    assert held["mean"] == pytest.approx(2 / 6) and held["se"] == pytest.approx(
        (2 / 6 * 4 / 6 / 5) ** 0.5, rel=0.05
    )
    assert verified["sessions_needed_per_arm"] > 100  # a 10-point difference needs hundreds of sessions
    text = report_cli(episodic_home, folder.parent)
    assert "with the injection records: held out 6, given memory 12, used it 9, ignored it 3" in text
    assert "needs about" in text


def test_sessions_needed_follows_the_variance() -> None:
    assert sessions_needed("verified", [1.0, 0.0] * 10) == 393  # p = 0.5, 10 points: 2·0.25·7.85/0.01
    assert sessions_needed("tool_calls_to_green", [5.0] * 10) is None  # no spread: nothing to estimate
    assert sessions_needed("verified", [1.0]) is None
