"""The experiment report on synthetic transcripts: an arm built to do better is detected, identical arms
show no effect, few sessions (or wide intervals) say "not enough sessions yet"."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.experiment import holdout, measures
from episodic.experiment.measures import SessionMeasures, measure
from episodic.experiment.report import MIN_SESSIONS_PER_ARM, build_report
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import Scrubber
from fakes.experiment_sessions import write_session

HITS = [{"session_id": "old-episode-1", "similarity": 0.71}]
SHARE = 0.3


def ids_in_arms(n_with: int, n_without: int, share: float = SHARE) -> dict[str, list[str]]:
    """Session ids the hook's own hash puts in each arm (the tests never choose an arm by hand)."""
    arms: dict[str, list[str]] = {"with": [], "without": []}
    wanted = {"with": n_with, "without": n_without}
    for i in itertools.count():
        sid = f"{i:08x}-0000-4000-8000-{i:012x}"
        arm = holdout.arm_for(sid, share)
        if len(arms[arm]) < wanted[arm]:
            arms[arm].append(sid)
        if all(len(arms[a]) == wanted[a] for a in arms):
            return arms


def log_sessions(home: Path, session_ids: list[str], share: float = SHARE) -> None:
    def setting(name: str, default: Any) -> Any:
        return {"experiment_holdout": share}.get(name, default)

    for sid in session_ids:
        holdout.decide({"session_id": sid}, HITS, setting, home)


def write_arm(folder: Path, ids: list[str], good: int, good_kw: dict, bad_kw: dict) -> None:
    for n, sid in enumerate(ids):
        write_session(folder, sid, **(good_kw if n < good else bad_kw))


GOOD = {"failing_runs": 1, "verified": True, "tokens_per_reply": 800, "seconds_per_step": 15.0}
BAD = {
    "failing_runs": 3,
    "verified": False,
    "tokens_per_reply": 1500,
    "seconds_per_step": 30.0,
    "revert": True,
}


def report_cli(home: Path, transcripts: Path, *extra: str) -> Any:
    result = CliRunner().invoke(
        build_cli(), ["experiment", "report", "--transcripts", str(transcripts), *extra]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_the_arm_with_memory_built_to_do_better_is_detected(episodic_home: Path, tmp_path: Path) -> None:
    arms = ids_in_arms(40, 20)
    folder = tmp_path / "projects" / "-home-dev-shop"
    write_arm(folder, arms["with"], 36, GOOD, BAD)  # 90 % verified, one failing run each
    write_arm(folder, arms["without"], 6, GOOD, BAD)  # 30 % verified, three failing runs and a revert
    log_sessions(episodic_home, arms["with"] + arms["without"])

    report = json.loads(report_cli(episodic_home, folder.parent, "--json"))
    assert report["sessions"]["measured"] == {"with": 40, "without": 20}
    assert report["sessions"]["measured_now"] == 60  # measured from the transcripts on this machine
    assert report["verdict"]["status"] == "helped"
    rows = {r["name"]: r for r in report["measures"]}
    assert rows["verified"]["status"] == "better"
    assert rows["verified"]["with"]["mean"] == pytest.approx(0.9)
    assert rows["verified"]["without"]["mean"] == pytest.approx(0.3)
    low, high = rows["verified"]["interval"]
    assert 0 < low < 0.6 < high
    for name in ("failed_checks", "total_tokens", "wall_seconds", "reverted_edits"):
        assert rows[name]["status"] == "better", rows[name]

    later = json.loads(report_cli(episodic_home, folder.parent, "--since", "2999-01-01", "--json"))
    assert later["sessions"]["measured"] == {"with": 0, "without": 0}
    assert later["verdict"]["status"] == "not-enough"
    text = report_cli(episodic_home, folder.parent)
    assert "verdict: memory helped" in text and "ended verified (share) (primary): better" in text
    assert "█" in text and "[" in text and "|" in text  # the chart: bars per arm, the interval on an axis


def test_few_sessions_say_not_enough_even_with_a_large_difference(
    episodic_home: Path, tmp_path: Path
) -> None:
    arms = ids_in_arms(5, 2)
    folder = tmp_path / "projects" / "-home-dev-shop"
    write_arm(folder, arms["with"], 5, GOOD, BAD)
    write_arm(folder, arms["without"], 0, GOOD, BAD)
    log_sessions(episodic_home, arms["with"] + arms["without"])

    report = json.loads(report_cli(episodic_home, folder.parent, "--json"))
    assert report["verdict"]["status"] == "not-enough"
    assert report["verdict"]["text"].startswith("not enough sessions yet")
    assert all(r["interval"] is None and r["status"] == "too-few" for r in report["measures"])
    assert "not enough sessions yet" in report_cli(episodic_home, folder.parent)


def _templates(tmp_path: Path) -> tuple[SessionMeasures, SessionMeasures]:
    folder = tmp_path / "templates"
    write_session(folder, "good0000-0000-4000-8000-000000000001", **GOOD)
    write_session(folder, "bad00000-0000-4000-8000-000000000002", **BAD)
    source = ClaudeCodeSource(Scrubber(), roots=[])
    loaded = [source.load(s) for s in sorted(source.discover([str(folder)]), key=lambda s: s.main_path)]
    bad, good = (measure(t) for t in loaded)  # type: ignore[arg-type]
    assert good.verified and not bad.verified
    return good, bad


def _report(
    arms: dict[str, list[str]], pick: dict[str, list[SessionMeasures]], share: float = SHARE
) -> dict[str, Any]:
    log = [holdout.entry(sid, arm, share, HITS) for arm, ids in arms.items() for sid in ids]  # type: ignore[arg-type]
    found = {
        sid: m.model_copy(update={"session_id": sid})
        for arm, ids in arms.items()
        for sid, m in zip(ids, pick[arm], strict=True)
    }
    return build_report(log, found, configured_holdout=share)


def test_identical_arms_show_no_effect(tmp_path: Path) -> None:
    good, bad = _templates(tmp_path)
    arms = ids_in_arms(500, 500)
    same = [good, bad] * 250
    report = _report(arms, {"with": same, "without": same})
    assert report["verdict"]["status"] == "no-effect", report["verdict"]
    assert report["verdict"]["text"].startswith("no effect detected")
    assert {r["status"] for r in report["measures"]} == {"no-effect"}


def test_arms_drawn_from_one_distribution_claim_no_effect(tmp_path: Path) -> None:
    good, bad = _templates(tmp_path)
    rng = np.random.default_rng(7)
    arms = ids_in_arms(500, 500)
    pick = {arm: [good if rng.random() < 0.5 else bad for _ in range(500)] for arm in arms}
    report = _report(arms, pick)
    assert report["verdict"]["status"] in ("no-effect", "not-enough"), report["verdict"]
    assert not [r for r in report["measures"] if r["status"] in ("better", "worse")]


def test_enough_sessions_but_wide_intervals_still_say_not_enough(tmp_path: Path) -> None:
    good, bad = _templates(tmp_path)
    arms = ids_in_arms(15, MIN_SESSIONS_PER_ARM + 5)
    report = _report(arms, {"with": [good, bad] * 7 + [good], "without": [bad, good] * 7 + [bad]})
    assert report["verdict"]["status"] == "not-enough"
    assert "too wide" in report["verdict"]["text"]
    verified = report["measures"][0]
    assert verified["status"] == "unclear" and verified["interval"][0] < 0 < verified["interval"][1]


def test_since_keeps_only_sessions_first_logged_after_it(tmp_path: Path) -> None:
    good, _ = _templates(tmp_path)
    arms = ids_in_arms(3, 1)
    log = [holdout.entry(sid, arm, SHARE, HITS) for arm, ids in arms.items() for sid in ids]  # type: ignore[arg-type]
    log[0]["at"] = "2026-01-01T00:00:00Z"
    found = {e["session_id"]: good.model_copy(update={"session_id": e["session_id"]}) for e in log}
    from datetime import datetime

    report = build_report(log, found, since=datetime(2026, 2, 1))
    assert sum(report["sessions"]["measured"].values()) == 3


def test_index_measures_logged_sessions_once_per_content(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    folder = tmp_path / "projects" / "-home-dev-shop"
    logged = ["aaaa0000-0000-4000-8000-00000000000a", "bbbb0000-0000-4000-8000-00000000000b"]
    for sid in [*logged, "cccc0000-0000-4000-8000-00000000000c"]:
        write_session(folder, sid, **GOOD)
    log_sessions(episodic_home, logged)
    for _ in range(2):
        result = CliRunner().invoke(build_cli(), ["index", str(folder.parent), "--json"])
        assert result.exit_code == 0, result.output
    lines = measures.measures_path(episodic_home).read_text().splitlines()
    assert sorted(json.loads(line)["session_id"] for line in lines) == logged  # unlogged: never measured
    write_session(folder, logged[0], **BAD)  # the session grew (new content): measured again
    CliRunner().invoke(build_cli(), ["index", str(folder.parent)])
    assert measures.load_all(episodic_home)[logged[0]].verified is False
