"""Backfill: the estimate runs on exactly the sample, and the wait reads the card archive and failure markers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.aws.card_archive import card_key
from episodic.harvest.backfill import estimate_backfill, expected_cards, wait_for_cards
from episodic.harvest.harvest import Harvester, select_sessions
from episodic.harvest.state import HarvestState
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import Scrubber
from fakes.harvest_sessions import write_session
from moto import mock_aws

BUCKET = "backfill-bucket"
SIDS = [f"{c * 8}-0000-4000-8000-00000000000{c}" for c in "abc"]


@pytest.fixture()
def s3(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _harvest(s3: Any, tmp_path: Path, limit: int) -> tuple[Any, Any, list[Any]]:
    projects = tmp_path / "projects"
    for age, sid in zip((30, 60, 90), SIDS, strict=True):
        write_session(projects, sid, age_minutes=age, turns=2)
    source = ClaudeCodeSource(Scrubber(), roots=[])
    harvester = Harvester(
        s3, source, Scrubber(), HarvestState(tmp_path / "state.json"), bucket=BUCKET, tenant="bob"
    )
    report = harvester.new_report()
    sessions = select_sessions(
        source.discover([str(projects)]), report, now=time.time(), quiet_minutes=15, limit=limit
    )
    return harvester, report, sessions


def test_estimate_covers_only_the_selected_sessions(s3: Any, tmp_path: Path) -> None:
    harvester, _, sessions = _harvest(s3, tmp_path, limit=2)
    estimate = estimate_backfill(
        harvester.source, sessions, token_budget=6000, model_id="us.anthropic.claude-sonnet-4-6"
    )
    assert estimate.sessions == 2 and estimate.episodes == 2
    cost = estimate.estimate()
    assert cost["distill_usd"] is not None and cost["distill_usd"] > 0


class Pipeline:
    """Stands in for the distill Lambda: on the first poll it archives one card and fails another session."""

    def __init__(self, s3: Any, report: Any) -> None:
        self.s3 = s3
        self.report = report
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if len(self.sleeps) == 1:
            first, second = self.report.uploaded[:2]
            self.s3.put_object(
                Bucket=BUCKET,
                Key=card_key("bob", first),
                Body=b"{}",
                Metadata={"tenant": "bob", "source-sha256": self.report.body_sha256[first]},
            )
            marker = {
                "tenant_id": "bob",
                "session_key": second,
                "reason": "InvalidCardError: code in card",
                "source_sha256": self.report.body_sha256[second],
            }
            self.s3.put_object(
                Bucket=BUCKET, Key=f"failures/bob/{second}.json", Body=json.dumps(marker).encode()
            )


def test_wait_reports_indexed_failed_and_timed_out_sessions(s3: Any, tmp_path: Path) -> None:
    harvester, report, sessions = _harvest(s3, tmp_path, limit=3)
    harvester.run(sessions, report)
    assert len(report.uploaded) == 3
    # a stale card of an older version of the third session does not count as indexed
    third = report.uploaded[2]
    s3.put_object(Bucket=BUCKET, Key=card_key("bob", third), Body=b"{}", Metadata={"source-sha256": "old"})
    pipeline = Pipeline(s3, report)
    ticks = iter(range(0, 10_000, 10))
    wait = wait_for_cards(
        s3,
        BUCKET,
        "bob",
        expected_cards(report),
        timeout_seconds=25,
        poll_seconds=10,
        clock=lambda: float(next(ticks)),
        sleep=pipeline.sleep,
    )
    assert wait.indexed == [report.uploaded[0]]
    assert wait.failed == [(report.uploaded[1], "InvalidCardError: code in card")]
    assert wait.pending == [third]
    assert pipeline.sleeps and all(s <= 10 for s in pipeline.sleeps)


def test_unchanged_sessions_count_as_indexed_when_their_card_exists(s3: Any, tmp_path: Path) -> None:
    harvester, report, sessions = _harvest(s3, tmp_path, limit=1)
    harvester.run(sessions, report)
    sid = report.uploaded[0]
    s3.put_object(Bucket=BUCKET, Key=card_key("bob", sid), Body=b"{}")
    _, again, sessions = _harvest(s3, tmp_path, limit=1)
    harvester.run(sessions, again)
    assert again.unchanged == [sid] and expected_cards(again) == {sid: None}
    wait = wait_for_cards(s3, BUCKET, "bob", expected_cards(again), timeout_seconds=0, sleep=lambda s: None)
    assert wait.indexed == [sid] and wait.pending == []
