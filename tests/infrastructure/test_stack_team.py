"""What a team's first deployment would trip on, checked at synth: model ids and the inference profile's
geography, the alarm subscription, per-tenant harvester policies, names that survive destroy + deploy, and the
read-only serving option (one synth with every option on, cdk-nag and cfn-lint clean)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from conftest import Synth, synth

from stacks.config import ContextError, StackConfig
from stacks.episodic_stack import EpisodicStack

RETAINED_NAME_PROPERTIES = ("VectorBucketName", "Name", "TableName", "BucketName")


@pytest.fixture(scope="module")
def team_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(
        tmp_path_factory.mktemp("cdk-team"),
        alarmEmail="oncall@example.com",
        harvesterTenants="acme,globex-eu",
        readOnly="true",
    )


def _role_statements(s: Synth, role_fragment: str) -> list[dict[str, Any]]:
    found = []
    for res in s.resources("AWS::IAM::Policy").values():
        roles = json.dumps(res["Properties"].get("Roles", []))
        if role_fragment in roles:
            found.extend(res["Properties"]["PolicyDocument"]["Statement"])
    return found


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {
        a for st in statements for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
    }


# ---------------------------------------------------------------- checks before anything is deployed


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "us.claude-sonnet-4-6", "us.", "anthropic."])
def test_a_model_id_without_its_provider_is_refused_with_the_fix(model: str) -> None:
    with pytest.raises(ContextError, match=r"not a Bedrock model id.*bedrockModelId=us\.anthropic"):
        StackConfig(bedrock_model_id=model)


@pytest.mark.parametrize(
    "model",
    ["anthropic.claude-sonnet-4-6", "eu.anthropic.claude-sonnet-4-6", "global.anthropic.claude-sonnet-4-6"],
)
def test_well_formed_model_ids_pass(model: str) -> None:
    assert StackConfig(bedrock_model_id=model).bedrock_model_id == model


@pytest.mark.parametrize(
    ("model", "region", "fix"),
    [
        ("us.anthropic.claude-sonnet-4-6", "eu-west-1", "eu.anthropic.claude-sonnet-4-6"),
        ("us.anthropic.claude-sonnet-4-6", "ap-southeast-2", "apac.anthropic.claude-sonnet-4-6"),
        ("eu.anthropic.claude-sonnet-4-6", "us-east-1", "us.anthropic.claude-sonnet-4-6"),
        ("us.anthropic.claude-sonnet-4-6", "us-gov-west-1", "us-gov.anthropic.claude-sonnet-4-6"),
        ("us.anthropic.claude-sonnet-4-6", "sa-east-1", "global.anthropic.claude-sonnet-4-6"),
    ],
)
def test_an_inference_profile_from_another_geography_fails_synth_with_the_profile_to_use(
    model: str, region: str, fix: str
) -> None:
    with pytest.raises(ContextError, match=rf"does not route from {region}: .*bedrockModelId={fix}"):
        StackConfig(bedrock_model_id=model).check_region(region)
    app = cdk.App(context={"bedrockModelId": model, "bundle": "false"})
    with pytest.raises(ContextError, match="does not route"):
        EpisodicStack(app, "Refused", env=cdk.Environment(region=region))


@pytest.mark.parametrize(
    ("model", "region"),
    [
        ("us.anthropic.claude-sonnet-4-6", "us-west-2"),
        ("eu.anthropic.claude-sonnet-4-6", "eu-central-1"),
        ("global.anthropic.claude-sonnet-4-6", "sa-east-1"),
        ("anthropic.claude-sonnet-4-6", "eu-west-1"),  # an on-demand model id names no geography
        ("us.anthropic.claude-sonnet-4-6", None),  # region unknown at synth: nothing to check
    ],
)
def test_a_profile_of_the_regions_geography_passes(model: str, region: str | None) -> None:
    StackConfig(bedrock_model_id=model).check_region(region)


def test_a_malformed_alarm_email_or_tenant_is_refused() -> None:
    with pytest.raises(ContextError, match="alarmEmail"):
        StackConfig(alarm_email="oncall")
    with pytest.raises(ContextError, match="harvesterTenants"):
        StackConfig(harvester_tenants=("acme/../globex",))


# ---------------------------------------------------------------- the template


def test_the_alarm_email_is_subscribed_to_the_alarm_topic(team_synth: Synth, default_synth: Synth) -> None:
    (subscription,) = team_synth.resources("AWS::SNS::Subscription").values()
    (topic_id,) = team_synth.resources("AWS::SNS::Topic")
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "oncall@example.com"
    assert subscription["Properties"]["TopicArn"] == {"Ref": topic_id}
    assert default_synth.resources("AWS::SNS::Subscription") == {}


def test_each_harvester_policy_writes_only_its_tenants_prefix(team_synth: Synth) -> None:
    policies = team_synth.resources("AWS::IAM::ManagedPolicy")
    # {"acme": <arn>, "globex-eu": <arn>} as one JSON output, joined at deploy time
    output = json.dumps(team_synth.template["Outputs"]["HarvesterPolicyArns"]["Value"])
    by_tenant = {}
    for tenant in ("acme", "globex-eu"):
        (logical_id,) = [k for k in policies if f'\\"{tenant}\\":\\"", {{"Ref": "{k}"}}' in output]
        by_tenant[tenant] = policies[logical_id]["Properties"]["PolicyDocument"]["Statement"]
    for tenant, statements in by_tenant.items():
        writes = [st for st in statements if "s3:PutObject" in json.dumps(st["Action"])]
        assert [st["Action"] for st in writes] == ["s3:PutObject"]
        (resource,) = (
            writes[0]["Resource"] if isinstance(writes[0]["Resource"], list) else [writes[0]["Resource"]]
        )
        assert resource["Fn::Join"][1][-1] == f"/transcripts/{tenant}/*"
        reads = json.dumps([st["Resource"] for st in statements if st["Action"] == "s3:GetObject"])
        other = "globex-eu" if tenant == "acme" else "acme"
        assert f"/{tenant}/*" in reads and f"/{other}/" not in reads
        kms = [st for st in statements if "kms:GenerateDataKey" in json.dumps(st["Action"])]
        assert kms and all("kms:ViaService" in st["Condition"]["StringEquals"] for st in kms)
        assert not _actions(statements) - {
            "s3:PutObject",
            "s3:GetObject",
            "kms:GenerateDataKey",
            "kms:Decrypt",
        }


def test_retained_resources_take_their_names_from_the_stack_so_a_redeploy_does_not_collide(
    default_synth: Synth,
) -> None:
    resources = default_synth.template["Resources"]
    retained = {k: r for k, r in resources.items() if r.get("DeletionPolicy") == "Retain"}
    assert {r["Type"] for r in retained.values()} >= {
        "AWS::S3Vectors::VectorBucket",
        "AWS::SecretsManager::Secret",
        "AWS::S3::Bucket",
        "AWS::KMS::Key",
        "AWS::DynamoDB::Table",
    }
    for logical_id, resource in retained.items():
        for prop in RETAINED_NAME_PROPERTIES:
            name = resource.get("Properties", {}).get(prop)
            if name is None:
                continue  # CloudFormation generates a unique one
            assert not isinstance(name, str), (logical_id, prop, name)  # a fixed name would collide
            assert "AWS::StackId" in json.dumps(name), (logical_id, prop)
    (bucket,) = default_synth.resources("AWS::S3Vectors::VectorBucket").values()
    assert bucket["Properties"]["VectorBucketName"]["Fn::Join"][1][0] == "episodic-vectors-"
    # the Lambdas, the key policy and the outputs name the same bucket
    rendered = json.dumps(default_synth.template)
    assert rendered.count('"episodic-vectors-"') >= 4
    (table,) = [
        r for r in default_synth.resources("AWS::DynamoDB::Table").values() if "TableName" in r["Properties"]
    ]
    assert "AWS::StackId" in json.dumps(table["Properties"]["TableName"])


def test_read_only_serving_has_no_write_permission_and_no_write_tools(
    team_synth: Synth, default_synth: Synth
) -> None:
    writes = {
        "s3vectors:PutVectors",
        "s3vectors:DeleteVectors",
        "dynamodb:PutItem",
        "kms:Encrypt",
        "s3:PutObject",
    }
    assert _actions(_role_statements(default_synth, "ServingMcpRole")) & writes  # the default may record
    default = _role_statements(default_synth, "ServingMcpRole")
    # record_episode's evidence (the uploaded transcript) and its card archive, only where it may write
    assert any(st["Action"] == "s3:PutObject" and "/cards/*" in json.dumps(st["Resource"]) for st in default)
    assert any(
        st["Action"] == "s3:GetObject" and "/transcripts/*" in json.dumps(st["Resource"]) for st in default
    )
    read_only = _actions(_role_statements(team_synth, "ServingMcpRole"))
    assert "s3vectors:QueryVectors" in read_only and "dynamodb:Query" in read_only
    assert "kms:GenerateDataKey" not in read_only
    assert not read_only & writes
    mcp = [
        f
        for f in team_synth.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "lambdas.mcp.handler.handler"
    ]
    assert mcp[0]["Properties"]["Environment"]["Variables"]["EPISODIC_READ_ONLY"] == "true"


def test_the_team_options_keep_cdk_nag_and_cfn_lint_clean(team_synth: Synth) -> None:
    assert team_synth.nag_violations() == []
    assert team_synth.cfn_lint_findings() == []
