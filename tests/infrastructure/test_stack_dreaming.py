"""The weekly dream on AWS, behind `-c dreaming=true`: EventBridge Scheduler -> the Dream Lambda, records
under dreams/ in the transcripts bucket; off by default. cdk-nag and least privilege hold with it on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Synth, synth

from stacks.config import ContextError, StackConfig


@pytest.fixture(scope="module")
def dreaming(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(tmp_path_factory.mktemp("cdk-dreaming"), dreaming="true")  # as `-c dreaming=true` passes it


def _role_statements(s: Synth, handler: str) -> list[dict[str, Any]]:
    (fn,) = [
        f for f in s.resources("AWS::Lambda::Function").values() if f["Properties"]["Handler"] == handler
    ]
    role = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    out: list[dict[str, Any]] = []
    for policy in s.resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def test_off_by_default(default_synth: Synth) -> None:
    assert default_synth.resources("AWS::Scheduler::Schedule") == {}
    handlers = {f["Properties"]["Handler"] for f in default_synth.resources("AWS::Lambda::Function").values()}
    assert "lambdas.dream.handler.handler" not in handlers
    statements = _role_statements(default_synth, "lambdas.mcp.handler.handler")
    mcp = json.dumps(statements)
    # the MCP Lambda reads dream records, never writes them (its only object write is record_episode's card)
    writes = [json.dumps(st["Resource"]) for st in statements if "s3:PutObject" in json.dumps(st["Action"])]
    assert "/dreams/*" in mcp and writes and all("/cards/*" in w and "/dreams/" not in w for w in writes)


def test_a_weekly_schedule_invokes_the_dream_lambda(dreaming: Synth) -> None:
    (schedule,) = dreaming.resources("AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    assert (
        props["ScheduleExpression"] == "cron(0 6 ? * MON *)" and props["ScheduleExpressionTimezone"] == "UTC"
    )
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"} and props["State"] == "ENABLED"
    functions = {k: f for k, f in dreaming.resources("AWS::Lambda::Function").items()}
    (dream_id,) = [
        k for k, f in functions.items() if f["Properties"]["Handler"] == "lambdas.dream.handler.handler"
    ]
    assert props["Target"]["Arn"] == {"Fn::GetAtt": [dream_id, "Arn"]}
    env = functions[dream_id]["Properties"]["Environment"]["Variables"]
    assert env["EPISODIC_DISTILLER"] == "bedrock" and env["EPISODIC_DREAMS_PREFIX"] == "dreams/"
    statements = json.dumps(_role_statements(dreaming, "lambdas.dream.handler.handler"))
    assert (
        "s3vectors:PutVectors" not in statements and "s3vectors:QueryVectors" in statements
    )  # index read-only
    assert "/dreams/*" in statements and "bedrock:InvokeModel" in statements
    alarms = [
        a["Properties"]["AlarmDescription"] for a in dreaming.resources("AWS::CloudWatch::Alarm").values()
    ]
    assert "Dream Lambda errors" in alarms  # a failed phase fails the run loudly


def test_cdk_nag_is_clean_with_dreaming_on(dreaming: Synth) -> None:
    report = json.loads((dreaming.outdir / "validation-report.json").read_text())
    assert [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])] == []


def test_the_schedule_and_prefix_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ContextError, match="dreamSchedule"):
        StackConfig(dream_schedule="every monday")
    with pytest.raises(ContextError, match="dreams_prefix"):
        StackConfig(dreams_prefix="/dreams")
    assert StackConfig(dream_schedule="rate(7 days)").dream_schedule == "rate(7 days)"
