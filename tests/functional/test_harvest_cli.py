"""`episodic harvest | backfill | cron | hook session-end` end to end through click, against moto S3."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.harvest import cron, spool
from fakes.fake_scheduler import FakeSystem
from fakes.harvest_sessions import SECRETS, write_session
from kits import warm_cli
from moto import mock_aws

BUCKET = "cli-transcripts"
SID_A = "aaaaaaaa-1111-4000-8000-00000000000a"
SID_B = "bbbbbbbb-1111-4000-8000-00000000000b"


@pytest.fixture()
def env(episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    claude = tmp_path / "claude"
    write_session(claude / "projects", SID_A, subagent=True, age_minutes=30)
    write_session(claude / "projects", SID_B, age_minutes=60)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield {"home": episodic_home, "claude": claude, "s3": s3}


def _run(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(build_cli(), list(args), input=input, catch_exceptions=False)


def _keys(s3: Any) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_harvest_then_rerun_uploads_nothing(env: dict[str, Any]) -> None:
    first = _run("harvest", "--bucket", BUCKET, "--tenant", "alice", "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["uploaded"] == 2 and data["found"] == 2
    assert _keys(env["s3"]) == [f"transcripts/alice/{SID_A}.jsonl", f"transcripts/alice/{SID_B}.jsonl"]
    for key in _keys(env["s3"]):
        body = env["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
        assert not [kind for kind, value in SECRETS.items() if value in body]

    again = _run("harvest", "--bucket", BUCKET, "--tenant", "alice")
    assert again.exit_code == 0
    assert "found 2 sessions, selected 2: uploaded 0 (0.00 MB), unchanged 2" in again.stdout
    last = json.loads((env["home"] / "logs" / "last-harvest.json").read_text())
    assert last["mode"] == "harvest" and last["unchanged"] == 2


def test_dry_run_needs_no_bucket_and_uploads_nothing(env: dict[str, Any]) -> None:
    result = _run("harvest", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dry_run"] and data["uploaded"] == 2 and data["secrets_redacted"]
    assert _keys(env["s3"]) == []
    assert not (env["home"] / "logs" / "last-harvest.json").exists()


def test_bucket_comes_from_settings_or_the_stack_outputs(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = _run("harvest")
    assert missing.exit_code == 1 and "no transcripts bucket" in missing.output
    (env["home"] / "aws-outputs.json").write_text(
        json.dumps({"TranscriptsBucket": BUCKET, "McpEndpoint": "x"})
    )
    assert _run("harvest", "--limit", "1").exit_code == 0
    assert _keys(env["s3"]) == [f"transcripts/local/{SID_A}.jsonl"]
    monkeypatch.setenv("EPISODIC_TRANSCRIPTS_BUCKET", "other-bucket")
    env["s3"].create_bucket(Bucket="other-bucket")
    assert _run("harvest", "--limit", "1").exit_code == 0
    assert env["s3"].list_objects_v2(Bucket="other-bucket")["KeyCount"] == 1


def test_failed_run_exits_nonzero_with_reasons(env: dict[str, Any]) -> None:
    result = _run("harvest", "--bucket", "no-such-bucket")
    assert result.exit_code == 1
    assert "failed" in result.stdout and "NoSuchBucket" in result.stdout and "stopped early" in result.stdout


def test_session_end_hook_then_spool_upload(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    spawned: list[Path] = []
    monkeypatch.setattr(spool, "spawn_uploader", spawned.append)
    main = env["claude"] / "projects" / "-home-dev-shop" / f"{SID_A}.jsonl"
    payload = {"session_id": SID_A, "transcript_path": str(main), "cwd": "/home/dev/shop", "reason": "other"}
    hook = _run("hook", "session-end", input=json.dumps(payload))
    assert hook.exit_code == 0 and hook.output == ""
    assert spawned == [env["home"]]

    result = _run("harvest", "--from-spool", "--bucket", BUCKET, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["uploaded_sessions"] == [SID_A]
    assert _keys(env["s3"]) == [f"transcripts/local/{SID_A}.jsonl"]
    assert spool.read_entries(env["home"]) == []


def test_backfill_refuses_without_confirmation_when_not_interactive(env: dict[str, Any]) -> None:
    result = _run("backfill", "--limit", "1", "--bucket", BUCKET)
    assert result.exit_code == 1 and "re-run with --yes" in result.output
    assert "backfill: 1 most recent sessions, 1 episodes" in result.output
    assert _keys(env["s3"]) == []


def test_backfill_harvests_then_reports_cards_not_indexed(env: dict[str, Any]) -> None:
    result = _run("backfill", "--limit", "1", "--yes", "--bucket", BUCKET, "--timeout", "0", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["harvest"]["uploaded_sessions"] == [SID_A]
    assert data["cards"]["not_indexed_within_timeout"] == [SID_A]
    assert data["estimate"]["episodes"] == 1


def test_cron_install_status_remove(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    system = FakeSystem("MAILTO=me\n")
    monkeypatch.setattr(cron, "subprocess_runner", system)
    monkeypatch.setattr(cron, "available", lambda tool: tool == "crontab")  # a Linux box without systemd
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("EPISODIC_TRANSCRIPTS_BUCKET", BUCKET)
    installed = _run("cron", "install", "--at", "02:30")
    assert installed.exit_code == 0, installed.output
    assert system.crontab and system.crontab.startswith("MAILTO=me\n30 2 * * * ")
    assert f"--bucket {BUCKET}" in system.crontab

    assert _run("harvest").exit_code == 0
    status = _run("cron", "status")
    assert "schedule: 30 2 * * *" in status.stdout
    assert "last run (harvest" in status.stdout and "uploaded 2" in status.stdout

    assert _run("cron", "remove").exit_code == 0
    assert system.crontab == "MAILTO=me\n"
    assert "schedule: not installed" in _run("cron", "status").stdout


def test_cron_install_refuses_without_a_bucket(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    system = FakeSystem()
    monkeypatch.setattr(cron, "subprocess_runner", system)
    result = _run("cron", "install")
    assert result.exit_code == 1 and "no transcripts bucket" in result.output
    assert system.commands == []


def test_real_hook_entry_fails_open(episodic_home: Path) -> None:
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "hook", "session-end"],
        input="{not json",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "session-end:" in (episodic_home / "logs" / spool.HOOK_LOG).read_text()


def test_setup_aws_records_the_stack_outputs_for_harvest(episodic_home: Path, tmp_path: Path) -> None:
    from episodic.harvest.state import resolve_bucket

    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(
        json.dumps({"EpisodicStack": {"TranscriptsBucketName": "b-123", "EndpointUrl": "https://x/mcp"}})
    )
    result = CliRunner().invoke(build_cli(), ["setup", "aws", "--outputs", str(outputs)])
    assert result.exit_code == 0, result.output
    assert "https://x/mcp" in result.output
    assert resolve_bucket(None, None, episodic_home) == "b-123"
    outputs.write_text(json.dumps({"Other": {"X": 1}}))
    bad = CliRunner().invoke(build_cli(), ["setup", "aws", "--outputs", str(outputs)])
    assert bad.exit_code != 0 and "TranscriptsBucketName" in bad.output


def test_setup_aws_names_the_tenants_harvester_policy(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arn = "arn:aws:iam::123456789012:policy/EpisodicStack-HarvestersAcme-X"
    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(
        json.dumps(
            {
                "EpisodicStack": {
                    "TranscriptsBucketName": "b-123",
                    "HarvesterPolicyArns": json.dumps({"acme": arn}),
                }
            }
        )
    )
    monkeypatch.setenv("EPISODIC_TENANT", "acme")
    result = CliRunner().invoke(build_cli(), ["setup", "aws", "--outputs", str(outputs)])
    assert result.exit_code == 0, result.output
    assert f"aws iam attach-user-policy --user-name NAME --policy-arn {arn}" in result.output
    monkeypatch.setenv("EPISODIC_TENANT", "globex")
    other = CliRunner().invoke(build_cli(), ["setup", "aws", "--outputs", str(outputs)])
    assert other.exit_code == 0 and "-c harvesterTenants=globex" in other.output


def test_token_add_list_revoke_aws_manage_the_deployed_secret(episodic_home: Path, tmp_path: Path) -> None:
    from episodic.aws.secrets_auth import SecretsManagerAuthenticator
    from fakes.secret_edit import hand_edit

    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1")
        arn = sm.create_secret(Name="episodic/tokens-1a2b3c4d", SecretString='{"version": 1, "tokens": []}')[
            "ARN"
        ]
        outputs = tmp_path / "cdk-outputs.json"
        outputs.write_text(
            json.dumps({"EpisodicStack": {"TranscriptsBucketName": "b", "TokensSecretArn": arn}})
        )
        assert _run("setup", "aws", "--outputs", str(outputs)).exit_code == 0
        added = CliRunner().invoke(
            build_cli(), ["token", "add", "--aws", "--tenant", "acme", "--scope", "write"]
        )
        assert added.exit_code == 0, added.output
        token = added.stdout.strip()
        assert SecretsManagerAuthenticator(sm, arn).authenticate(token).tenant_id == "acme"
        assert not (episodic_home / "tokens.json").exists()  # the local token file is untouched
        listed = _run("token", "list", "--aws")
        token_id = listed.output.splitlines()[1].split()[0]
        assert "acme" in listed.output and "write" in listed.output and token not in listed.output
        revoked = CliRunner().invoke(build_cli(), ["token", "revoke", "--aws", token_id])
        assert revoked.exit_code == 0 and "within about 2 minutes" in revoked.output
        assert "no tokens" in _run("token", "list", "--aws").output
        hand_edit(sm, arn, "{broken")
        refused = CliRunner().invoke(build_cli(), ["token", "add", "--aws", "--tenant", "acme"])
        assert refused.exit_code != 0 and "not valid JSON" in refused.output


def test_cron_without_any_scheduler_reports_it_and_exits_0(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cron, "available", lambda tool: False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("EPISODIC_TRANSCRIPTS_BUCKET", BUCKET)
    installed = CliRunner().invoke(build_cli(), ["cron", "install"])
    assert installed.exit_code == 0 and "no scheduler on this machine" in installed.output
    status = CliRunner().invoke(build_cli(), ["cron", "status"])
    assert status.exit_code == 0 and "schedule: not installed" in status.output


def test_cron_status_where_crontab_is_missing_exits_0(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.kernel.errors import ConfigError

    def no_crontab(args: Any, input_text: str | None = None) -> Any:
        raise ConfigError(f"`{args[0]}` is not installed on this machine")

    monkeypatch.setattr(cron, "subprocess_runner", no_crontab)
    monkeypatch.setattr(cron, "available", lambda tool: tool == "crontab")
    monkeypatch.setattr(sys, "platform", "linux")
    status = CliRunner().invoke(build_cli(), ["cron", "status"])
    assert status.exit_code == 0, status.output
    assert "not installed on this machine" in status.output and "schedule: not installed" in status.output


def test_a_harvest_that_cannot_start_leaves_a_visible_mark(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.cli.doctor import FAIL, check_harvest
    from episodic.kernel.settings import load_settings

    monkeypatch.setenv("EPISODIC_TRANSCRIPTS_BUCKET", BUCKET)
    failed = CliRunner().invoke(build_cli(), ["harvest", "--profile", "expired-sso-profile"])
    assert failed.exit_code != 0
    status = _run("cron", "status")
    assert "FAILED, stopped early" in status.stdout and "expired-sso-profile" in status.stdout
    check = check_harvest(load_settings())
    assert check is not None and check.status == FAIL and "expired-sso-profile" in check.detail

    assert _run("harvest").exit_code == 0  # the next good run clears it
    check = check_harvest(load_settings())
    assert check is not None and check.status == "ok"
