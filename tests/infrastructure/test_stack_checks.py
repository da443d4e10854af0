"""cdk-nag (AwsSolutions) with a reason on every acknowledgment, cfn-lint, and the context switches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Synth, synth

from stacks.config import ContextError, StackConfig

# CDK always writes DependsOn for a role's default policy beside the GetAtt of the role: redundant, harmless
CFN_LINT_IGNORED = {"W3005"}
# cfn-lint's resource schema for AWS::S3Vectors::Index (1.58) predates the documented
# MetadataConfiguration.TextSearchConfigurations: that one property is reported as unknown (E3002)
SCHEMA_LAGS = ("TextSearchConfigurations",)


def test_cdk_nag_has_no_unacknowledged_findings(default_synth: Synth) -> None:
    report = json.loads((default_synth.outdir / "validation-report.json").read_text())
    violations = [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])]
    assert violations == []


def test_every_nag_acknowledgment_has_a_reason(default_synth: Synth) -> None:
    metadata = json.loads(
        (default_synth.outdir / f"{default_synth.stack.artifact_id}.metadata.json").read_text()
    )
    acknowledged = {
        rule: reason
        for entries in metadata.values()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for rule, reason in entry["data"].items()
    }
    assert any("AwsSolutions-IAM5" in rule for rule in acknowledged)
    for rule, reason in acknowledged.items():
        assert isinstance(reason, str) and len(reason.strip()) > 20, rule


def test_cfn_lint_is_clean(default_synth: Synth) -> None:
    from cfnlint.api import ManualArgs, lint_file

    template = default_synth.outdir / f"{default_synth.stack.artifact_id}.template.json"
    matches = lint_file(Path(template), ManualArgs(regions=["us-east-1"]))
    lagging = [m for m in matches if m.rule.id == "E3002" and any(k in m.message for k in SCHEMA_LAGS)]
    remaining = [
        f"{m.rule.id} {m.message}" for m in matches if m.rule.id not in CFN_LINT_IGNORED and m not in lagging
    ]
    assert remaining == []


def test_provisioned_concurrency_can_be_turned_off(tmp_path: Path) -> None:
    off = synth(tmp_path, nag=False, provisionedConcurrency="0")  # as `-c provisionedConcurrency=0` passes it
    (alias,) = off.resources("AWS::Lambda::Alias").values()
    assert "ProvisionedConcurrencyConfig" not in alias["Properties"]


def test_the_stack_knows_the_cores_renderings_and_indexes_the_card_ones_by_default() -> None:
    from episodic.kernel import models

    from stacks import config

    assert (config.RENDERINGS, config.CARD_RENDERINGS) == (models.RENDERINGS, models.CARD_RENDERINGS)
    assert StackConfig().renderings == models.CARD_RENDERINGS  # the deployed LLM distiller's cards
    assert StackConfig(renderings=models.RENDERINGS).renderings == models.RENDERINGS


def test_synth_refuses_a_query_rendering_that_is_not_indexed() -> None:
    with pytest.raises(ContextError, match=r"queryRendering 'reflect' is not indexed"):
        StackConfig(renderings=("struct", "semantic"), query_rendering="reflect")
    import aws_cdk as cdk

    from stacks.episodic_stack import EpisodicStack

    app = cdk.App(context={"renderings": "struct,semantic", "queryRendering": "reflect", "bundle": "false"})
    with pytest.raises(ContextError, match="not indexed"):
        EpisodicStack(app, "Refused")


def test_context_strings_from_the_cli_are_coerced_and_checked() -> None:
    import aws_cdk as cdk

    app = cdk.App(
        context={
            "provisionedConcurrency": "0",
            "renderings": '["struct"]',
            "queryRendering": "struct",
            "titanDimension": "512",
            "bundle": "false",
        }
    )
    config = StackConfig.from_context(app.node)
    assert (config.provisioned_concurrency, config.renderings, config.titan_dimension, config.bundle) == (
        0,
        ("struct",),
        512,
        False,
    )
    assert config.foundation_model_id == "anthropic.claude-sonnet-4-6" and config.uses_inference_profile
    for bad in (
        {"titanDimension": "300"},
        {"distillMaxConcurrency": "1"},
        {"bundle": "maybe"},
        {"namePrefix": "Bad_Name"},
    ):
        with pytest.raises(ContextError):
            StackConfig.from_context(cdk.App(context=bad).node)
