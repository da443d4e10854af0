"""The SessionEnd hook's spool and the detached uploader that drains it."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.harvest import spool
from episodic.harvest.harvest import Harvester
from episodic.harvest.runner import drain_spool
from episodic.harvest.state import STATE_FILE, HarvestState
from episodic.kernel.settings import load_settings
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import Scrubber
from fakes.harvest_sessions import write_session
from moto import mock_aws

BUCKET = "spool-bucket"
SID_A = "aaaaaaaa-0000-4000-8000-00000000000a"
SID_B = "bbbbbbbb-0000-4000-8000-00000000000b"


def _hook(home: Path, payload: Any, spawned: list[Path] | None = None) -> int:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return spool.session_end(
        io.StringIO(text), home=home, spawn=(spawned.append if spawned is not None else None)
    )


def test_hook_queues_the_transcript_and_spawns_the_uploader(tmp_path: Path) -> None:
    spawned: list[Path] = []
    payload = {
        "session_id": SID_A,
        "transcript_path": "/x/p/a.jsonl",
        "cwd": "/x",
        "hook_event_name": "SessionEnd",
    }
    assert _hook(tmp_path, payload, spawned) == 0
    assert spawned == [tmp_path]
    entries = spool.read_entries(tmp_path)
    assert [(e.transcript_path, e.session_id, e.cwd) for e in entries] == [("/x/p/a.jsonl", SID_A, "/x")]


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", {"session_id": "s"}, {"transcript_path": 7}])
def test_hook_fails_open_on_bad_input_and_logs_one_line(tmp_path: Path, payload: Any, capsys: Any) -> None:
    spawned: list[Path] = []
    assert _hook(tmp_path, payload, spawned) == 0
    assert spawned == [] and spool.read_entries(tmp_path) == []
    assert capsys.readouterr() == ("", "")
    log = (tmp_path / "logs" / spool.HOOK_LOG).read_text().splitlines()
    assert len(log) == 1 and "session-end:" in log[0]


def test_hook_fails_open_when_the_uploader_cannot_start(tmp_path: Path) -> None:
    def broken(home: Path) -> None:
        raise OSError("fork failed")

    assert (
        spool.session_end(
            io.StringIO(json.dumps({"transcript_path": "/a.jsonl"})), home=tmp_path, spawn=broken
        )
        == 0
    )
    assert len(spool.read_entries(tmp_path)) == 1  # queued: the next uploader (or the nightly run) takes it
    assert "fork failed" in (tmp_path / "logs" / spool.HOOK_LOG).read_text()


def test_spawned_uploader_is_detached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        spool, "uploader_command", lambda: [sys.executable, "-c", "import time; time.sleep(30)"]
    )
    child = spool.spawn_uploader(tmp_path)
    try:
        assert os.getsid(child.pid) == child.pid  # its own session: survives Claude Code's process group
        assert child.stdin is None and child.stdout is None
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_remove_entries_keeps_entries_queued_meanwhile(tmp_path: Path) -> None:
    spool.append_entry(tmp_path, "/a.jsonl")
    first = spool.read_entries(tmp_path)
    spool.append_entry(tmp_path, "/b.jsonl")
    with spool.spool_path(tmp_path).open("a") as handle:
        handle.write("garbage\n")
    assert spool.remove_entries(tmp_path, {first[0].raw}) == 1
    assert [e.transcript_path for e in spool.read_entries(tmp_path)] == ["/b.jsonl"]


@pytest.fixture()
def s3(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _drain(client: Any, home: Path) -> Any:
    settings = load_settings(home=home)
    harvester = Harvester(
        client,
        ClaudeCodeSource(Scrubber(), roots=[]),
        Scrubber(),
        HarvestState.load(home / STATE_FILE),
        bucket=BUCKET,
        tenant="alice",
    )
    return drain_spool(settings, harvester)


def test_drain_uploads_exactly_the_spooled_sessions_without_quiet_period(s3: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    projects = tmp_path / "projects"
    just_ended = write_session(projects, SID_A, age_minutes=0, subagent=True)
    write_session(projects, SID_B, age_minutes=600)  # not queued: left to the nightly harvest
    spool.append_entry(home, str(just_ended), SID_A)
    spool.append_entry(home, str(just_ended), SID_A)  # /resume then exit again: one upload
    spool.append_entry(home, str(tmp_path / "gone.jsonl"), "gone")
    report = _drain(s3, home)
    assert report.uploaded == [SID_A]
    assert report.skipped == {"queued transcript no longer exists": 1}
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == [f"transcripts/alice/{SID_A}.jsonl"]
    assert spool.read_entries(home) == []
    body = s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read().decode()
    assert "ghp_" not in body and "[REDACTED:github-token]" in body


def test_drain_keeps_failed_entries_for_the_next_run(s3: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ended = write_session(tmp_path / "projects", SID_A, age_minutes=0)
    spool.append_entry(home, str(ended), SID_A)
    s3.delete_bucket(Bucket=BUCKET)
    report = _drain(s3, home)
    assert report.failed and report.failed[0][1].startswith("NoSuchBucket")
    assert [e.session_id for e in spool.read_entries(home)] == [SID_A]
    s3.create_bucket(Bucket=BUCKET)
    report = _drain(s3, home)
    assert report.uploaded == [SID_A] and spool.read_entries(home) == []


def test_only_one_drainer_at_a_time(s3: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ended = write_session(tmp_path / "projects", SID_A, age_minutes=0)
    spool.append_entry(home, str(ended), SID_A)
    with spool.uploader_lock(home) as held:
        assert held
        report = _drain(s3, home)
    assert report.uploaded == [] and report.skipped == {"another spool uploader is running": 1}
    assert len(spool.read_entries(home)) == 1


def test_drain_on_an_empty_spool_does_nothing(s3: Any, tmp_path: Path) -> None:
    report = _drain(s3, tmp_path)
    assert report.found == 0 and report.uploaded == [] and report.failed == []


def test_dry_run_drain_leaves_the_spool_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ended = write_session(tmp_path / "projects", SID_A, age_minutes=0)
    spool.append_entry(home, str(ended), SID_A)
    harvester = Harvester(
        None,
        ClaudeCodeSource(Scrubber(), roots=[]),
        Scrubber(),
        HarvestState.load(home / STATE_FILE),
        bucket=BUCKET,
        tenant="alice",
        dry_run=True,
    )
    report = drain_spool(load_settings(home=home), harvester)
    assert report.uploaded == [SID_A] and len(spool.read_entries(home)) == 1
