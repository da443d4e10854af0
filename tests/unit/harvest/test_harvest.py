"""Harvest against moto S3: scrubbed one-object-per-session uploads, idempotence, resume, quiet period."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from episodic.harvest.harvest import QUIET_REASON, Harvester, HarvestReport, object_key, select_sessions
from episodic.harvest.state import STATE_FILE, HarvestState
from episodic.kernel.models import Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import Scrubber
from fakes.harvest_sessions import SECRETS, set_age, write_session
from moto import mock_aws

BUCKET = "episodic-transcripts-test"
SID_A = "aaaaaaaa-0000-4000-8000-000000000001"
SID_B = "bbbbbbbb-0000-4000-8000-000000000002"
SID_C = "cccccccc-0000-4000-8000-000000000003"


@pytest.fixture()
def s3(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


class CallLog:
    """Counts the S3 operations a client makes (botocore events: no monkeypatching of moto)."""

    def __init__(self, client: Any) -> None:
        self.calls: list[str] = []
        self.params: dict[str, list[dict[str, Any]]] = {}
        client.meta.events.register("before-parameter-build.s3.*", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append(model.name)
        self.params.setdefault(model.name, []).append(dict(params))

    def count(self, *names: str) -> int:
        return sum(1 for c in self.calls if c in names)

    @property
    def writes(self) -> int:
        return self.count("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload")


class FailingClient:
    """Delegates to a real client; the upload numbered `fail_on` (1-based) raises `error`."""

    def __init__(self, inner: Any, fail_on: int, error: BaseException) -> None:
        self.inner = inner
        self.fail_on = fail_on
        self.error = error
        self.uploads = 0

    def upload_fileobj(self, *args: Any, **kwargs: Any) -> None:
        self.uploads += 1
        if self.uploads == self.fail_on:
            raise self.error
        self.inner.upload_fileobj(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _source() -> ClaudeCodeSource:
    return ClaudeCodeSource(Scrubber(), roots=[])


def _harvester(client: Any, home: Path, **kwargs: Any) -> Harvester:
    return Harvester(
        client,
        _source(),
        Scrubber(),
        HarvestState.load(home / STATE_FILE),
        bucket=BUCKET,
        tenant=kwargs.pop("tenant", "alice"),
        **kwargs,
    )


def _harvest(
    client: Any, home: Path, projects: Path, *, now: float | None = None, **kwargs: Any
) -> HarvestReport:
    limit = kwargs.pop("limit", None)
    since = kwargs.pop("since", None)
    harvester = _harvester(client, home, **kwargs)
    report = harvester.new_report()
    sessions = select_sessions(
        harvester.source.discover([str(projects)]),
        report,
        now=time.time() if now is None else now,
        quiet_minutes=15,
        limit=limit,
        since=since,
    )
    return harvester.run(sessions, report)


def _body(client: Any, key: str) -> str:
    return client.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode("utf-8")


def _all_bodies(client: Any) -> dict[str, str]:
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {item["Key"]: _body(client, item["Key"]) for item in listed}


def test_uploads_one_scrubbed_object_per_session_with_metadata(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    main_a = write_session(projects, SID_A, subagent=True)
    write_session(projects, SID_B)
    report = _harvest(s3, tmp_path, projects)
    assert sorted(report.uploaded) == [SID_A, SID_B]
    assert report.failed == []

    key = object_key("transcripts/", "alice", SID_A)
    assert key == f"transcripts/alice/{SID_A}.jsonl"
    head = s3.head_object(Bucket=BUCKET, Key=key)
    loaded = _source().load(next(iter(_source().discover([str(main_a)]))))
    assert isinstance(loaded, Trajectory)
    assert head["Metadata"] == {
        "source-sha256": loaded.source_sha256,
        "session-id": SID_A,
        "tenant": "alice",
        "harvest-version": "1",
    }
    lines = [json.loads(line) for line in _body(s3, key).splitlines()]
    sub = [line for line in lines if line.get("agentId") == "a7e7e7e"]
    assert len(sub) == 2 and all(line["isSidechain"] for line in sub)
    assert lines[-1]["uuid"] == "sub-a"  # main lines first, then the subagent's

    # the uploaded object is itself a session the pipeline can parse (subagent folded in)
    copy = tmp_path / "downloaded" / f"{SID_A}.jsonl"
    copy.parent.mkdir()
    copy.write_text(_body(s3, key))
    again = _source().load(next(iter(_source().discover([str(copy)]))))
    assert isinstance(again, Trajectory)
    assert again.session_id == SID_A
    assert len(again.tool_calls) == len(loaded.tool_calls)
    assert len(again.events) == len(loaded.events)


def test_rerun_uploads_nothing(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, subagent=True)
    write_session(projects, SID_B)
    _harvest(s3, tmp_path, projects)
    log = CallLog(s3)
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == []
    assert sorted(report.unchanged) == [SID_A, SID_B]
    assert log.calls == []  # the local state answers: not even a HEAD


def test_rerun_without_local_state_compares_object_metadata(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    write_session(projects, SID_B)
    _harvest(s3, tmp_path, projects)
    (tmp_path / STATE_FILE).unlink()
    log = CallLog(s3)
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [] and len(report.unchanged) == 2
    assert log.writes == 0 and log.count("HeadObject") == 2
    assert HarvestState.load(tmp_path / STATE_FILE).sha_for(
        BUCKET, object_key("transcripts/", "alice", SID_A)
    )


def test_grown_session_is_uploaded_again(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, turns=1)
    write_session(projects, SID_B)
    _harvest(s3, tmp_path, projects)
    key = object_key("transcripts/", "alice", SID_A)
    before = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]["source-sha256"]
    write_session(projects, SID_A, turns=3)
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [SID_A] and report.unchanged == [SID_B]
    after = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]["source-sha256"]
    assert after != before
    assert "Still failing after change 2" in _body(s3, key)


def test_no_planted_secret_reaches_the_bucket(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, subagent=True)
    write_session(projects, SID_B, turns=2)
    report = _harvest(s3, tmp_path, projects)
    bodies = _all_bodies(s3)
    assert len(bodies) == 2
    leaks = [(kind, key) for key, body in bodies.items() for kind, value in SECRETS.items() if value in body]
    assert leaks == []
    joined = "\n".join(bodies.values())
    for placeholder in ("aws-access-key", "github-token", "private-key", "jwt", "password", "bearer-token"):
        assert f"[REDACTED:{placeholder}]" in joined
    assert report.secrets_redacted["github-token"] >= 3  # user text and the subagent line, both sessions


def test_dry_run_uploads_nothing(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    write_session(projects, SID_B)
    log = CallLog(s3)
    report = _harvest(None, tmp_path, projects, dry_run=True)
    assert sorted(report.uploaded) == [SID_A, SID_B] and report.dry_run
    assert report.secrets_redacted  # the scrub ran, so the dry run shows what would be redacted
    assert log.calls == []
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
    assert not (tmp_path / STATE_FILE).exists()


def test_interrupted_run_resumes_without_uploading_the_first_again(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for age, sid in ((30, SID_A), (60, SID_B), (90, SID_C)):
        write_session(projects, sid, age_minutes=age)
    crashing = FailingClient(s3, fail_on=2, error=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        _harvest(crashing, tmp_path, projects)
    assert list(_all_bodies(s3)) == [object_key("transcripts/", "alice", SID_A)]  # most recent first

    log = CallLog(s3)
    report = _harvest(s3, tmp_path, projects)
    assert sorted(report.uploaded) == [SID_B, SID_C]
    assert report.unchanged == [SID_A]
    assert log.count("PutObject") == 2


def test_failed_upload_is_reported_and_never_marked_done(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for age, sid in ((30, SID_A), (60, SID_B), (90, SID_C)):
        write_session(projects, sid, age_minutes=age)
    error = ClientError(
        {"Error": {"Code": "SlowDown", "Message": "Please reduce your request rate."}}, "PutObject"
    )
    flaky = FailingClient(s3, fail_on=2, error=error)
    report = _harvest(flaky, tmp_path, projects)
    assert sorted(report.uploaded) == [SID_A, SID_C]
    assert report.failed == [(SID_B, "SlowDown: " + str(error))]
    assert report.aborted is None  # a passing error: the other sessions still go
    state = HarvestState.load(tmp_path / STATE_FILE)
    assert state.sha_for(BUCKET, object_key("transcripts/", "alice", SID_B)) is None

    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [SID_B]


def test_missing_bucket_stops_the_run_with_the_reason(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, age_minutes=30)
    write_session(projects, SID_B, age_minutes=60)
    harvester = Harvester(
        s3, _source(), Scrubber(), HarvestState(tmp_path / STATE_FILE), bucket="nope", tenant="t"
    )
    report = harvester.new_report()
    harvester.run(
        select_sessions(_source().discover([str(projects)]), report, now=time.time(), quiet_minutes=15),
        report,
    )
    assert report.aborted and report.aborted.startswith("NoSuchBucket")
    assert len(report.failed) == 1
    assert report.skipped["not tried: the run stopped early"] == 1


def test_session_in_quiet_period_is_left_for_later(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, age_minutes=120)
    live = write_session(projects, SID_B, age_minutes=3)
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [SID_A]
    assert report.skipped == {QUIET_REASON: 1}
    later = time.time() + 20 * 60  # injected clock: the session has been quiet long enough
    report = _harvest(s3, tmp_path, projects, now=later)
    assert report.uploaded == [SID_B]
    # a subagent still being written keeps its whole session waiting
    set_age([live], 120)
    sub = write_session(projects, SID_C, age_minutes=120, subagent=True)
    set_age([sub.parent / SID_C / "subagents" / "agent-a7e7e7e.jsonl"], 1)
    report = _harvest(s3, tmp_path, projects)
    assert report.skipped == {QUIET_REASON: 1} and report.uploaded == []


def test_big_bodies_use_multipart_upload(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, turns=40, pad=200)  # ~ 100 KB
    write_session(projects, SID_B)  # small
    log = CallLog(s3)
    report = _harvest(s3, tmp_path, projects, multipart_threshold=64 * 1024)
    assert sorted(report.uploaded) == [SID_A, SID_B]
    assert log.count("CreateMultipartUpload") == 1 and log.count("CompleteMultipartUpload") == 1
    assert log.count("PutObject") == 1
    created = log.params["CreateMultipartUpload"][0]
    assert created["Key"] == object_key("transcripts/", "alice", SID_A)
    assert created["Metadata"]["session-id"] == SID_A
    body = _body(s3, created["Key"])
    assert len(body) > 64 * 1024 and "Still failing after change 39" in body


def test_kms_key_is_requested_when_configured(s3: Any, tmp_path: Path) -> None:
    key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    log = CallLog(s3)
    report = _harvest(s3, tmp_path, projects, kms_key_id=key_id)
    assert report.failed == []
    put = log.params["PutObject"][0]
    assert put["ServerSideEncryption"] == "aws:kms" and put["SSEKMSKeyId"] == key_id
    head = s3.head_object(Bucket=BUCKET, Key=object_key("transcripts/", "alice", SID_A))
    assert head["ServerSideEncryption"] == "aws:kms"


def test_without_a_key_id_the_bucket_default_encryption_applies(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    log = CallLog(s3)
    _harvest(s3, tmp_path, projects)
    assert "ServerSideEncryption" not in log.params["PutObject"][0]


def test_unparseable_lines_are_dropped_and_counted(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A, extra_raw=b'{"type":"user","message":{"content":"AKIA' + b"Q" * 16 + b"\n")
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [SID_A] and report.lines_dropped == 1
    body = _body(s3, object_key("transcripts/", "alice", SID_A))
    assert "AKIA" + "Q" * 16 not in body
    assert all(json.loads(line) for line in body.splitlines())


def test_sessions_that_are_not_episodes_are_skipped_with_the_reason(s3: Any, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    folder = projects / "-home-dev-shop"
    snapshot = folder / f"{SID_B}.jsonl"
    snapshot.write_text(
        json.dumps({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}) + "\n"
    )
    compaction = folder / SID_A / "subagents" / "agent-acompact-123abc.jsonl"
    compaction.parent.mkdir(parents=True)
    compaction.write_text(
        json.dumps({"type": "user", "sessionId": SID_A, "agentId": "acompact-123abc"}) + "\n"
    )
    set_age([snapshot, compaction], 120)
    report = _harvest(s3, tmp_path, projects)
    assert report.uploaded == [SID_A]
    assert report.skipped == {"not an episode: snapshot-only": 1}
    assert "acompact" not in _body(s3, object_key("transcripts/", "alice", SID_A))


def test_limit_and_since_pick_the_most_recent_sessions(s3: Any, tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    projects = tmp_path / "projects"
    for age, sid in ((30, SID_A), (60, SID_B), (3000, SID_C)):
        write_session(projects, sid, age_minutes=age)
    report = _harvest(None, tmp_path, projects, dry_run=True, limit=2)
    assert report.uploaded == [SID_A, SID_B] and report.skipped == {"beyond --limit": 1}
    report = _harvest(None, tmp_path, projects, dry_run=True, since=datetime.now() - timedelta(days=1))
    assert report.uploaded == [SID_A, SID_B] and report.skipped == {"not modified since --since": 1}


def test_bad_tenant_is_refused_before_any_upload(tmp_path: Path) -> None:
    from episodic.kernel.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        _harvester(None, tmp_path, tenant="../other")


def test_unchanged_sessions_and_known_non_episodes_are_not_parsed_again(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "projects"
    write_session(projects, SID_A)
    snapshot = projects / "-home-dev-shop" / f"{SID_B}.jsonl"
    snapshot.write_text(
        json.dumps({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}) + "\n"
    )
    set_age([snapshot], 120)
    _harvest(s3, tmp_path, projects)
    loads: list[str] = []
    original = ClaudeCodeSource.load
    monkeypatch.setattr(
        ClaudeCodeSource, "load", lambda self, src: loads.append(src.main_path) or original(self, src)
    )
    report = _harvest(s3, tmp_path, projects)
    assert report.unchanged == [SID_A] and report.skipped == {"not an episode: snapshot-only": 1}
    assert loads == []
    snapshot.write_text(
        snapshot.read_text() + json.dumps({"type": "user", "message": {"content": "hi"}}) + "\n"
    )
    set_age([snapshot], 120)
    _harvest(s3, tmp_path, projects)
    assert loads == [str(snapshot)]  # new content: parsed again
