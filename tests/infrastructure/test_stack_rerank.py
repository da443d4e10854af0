"""`-c reranker=bedrock`: the MCP Lambda gets the setting and, on its role only, bedrock:Rerank and
InvokeModel on the one reranker model; the model's regions are checked at synth; cdk-nag and cfn-lint stay
clean; off by default."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from conftest import Synth, synth

from stacks.config import RERANK_MODEL_REGIONS, ContextError, StackConfig
from stacks.episodic_stack import EpisodicStack

MCP_HANDLER = "lambdas.mcp.handler.handler"


@pytest.fixture(scope="module")
def rerank_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(
        tmp_path_factory.mktemp("cdk-rerank"), reranker="bedrock", rerankModelId="cohere.rerank-v3-5:0"
    )


def _mcp_role_id(s: Synth) -> str:
    (fn,) = [
        f for f in s.resources("AWS::Lambda::Function").values() if f["Properties"]["Handler"] == MCP_HANDLER
    ]
    role: str = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    return role


def _statements_of(s: Synth, role_id: str) -> list[dict[str, Any]]:
    return [
        st
        for policy in s.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _rerank_statements(s: Synth) -> list[dict[str, Any]]:
    return [
        st
        for policy in s.resources("AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if "bedrock:Rerank" in json.dumps(st["Action"]) or "rerank" in json.dumps(st["Resource"])
    ]


def test_off_by_default(default_synth: Synth) -> None:
    assert _rerank_statements(default_synth) == []
    for fn in default_synth.resources("AWS::Lambda::Function").values():
        assert "EPISODIC_RERANKER" not in fn["Properties"].get("Environment", {}).get("Variables", {})


def test_the_setting_reaches_the_mcp_lambda(rerank_synth: Synth) -> None:
    template = Template.from_json(rerank_synth.template)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": MCP_HANDLER,
            "Environment": {
                "Variables": Match.object_like(
                    {"EPISODIC_RERANKER": "bedrock", "EPISODIC_RERANK_MODEL_ID": "cohere.rerank-v3-5:0"}
                )
            },
        },
    )
    others = [
        fn
        for fn in rerank_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] != MCP_HANDLER
    ]
    assert others and not any(
        "RERANK" in json.dumps(fn["Properties"].get("Environment", {})) for fn in others
    )


def test_the_mcp_role_alone_may_rerank_with_the_one_model(rerank_synth: Synth) -> None:
    template = Template.from_json(rerank_synth.template)
    model_arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":bedrock:",
                {"Ref": "AWS::Region"},
                "::foundation-model/cohere.rerank-v3-5:0",
            ],
        ]
    }
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": _mcp_role_id(rerank_synth)}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like({"Action": "bedrock:Rerank", "Effect": "Allow", "Resource": "*"}),
                        Match.object_like(
                            {"Action": "bedrock:InvokeModel", "Effect": "Allow", "Resource": model_arn}
                        ),
                    ]
                )
            },
        },
    )
    statements = _rerank_statements(rerank_synth)
    assert len(statements) == 2 and all(
        st in _statements_of(rerank_synth, _mcp_role_id(rerank_synth)) for st in statements
    )
    # nothing wider: no other model, no other action on "*"
    wildcard = [
        st for st in _statements_of(rerank_synth, _mcp_role_id(rerank_synth)) if st["Resource"] == "*"
    ]
    assert [st["Action"] for st in wildcard if "xray:" not in json.dumps(st["Action"])] == ["bedrock:Rerank"]


def test_cdk_nag_and_cfn_lint_stay_clean_with_the_reranker(rerank_synth: Synth) -> None:
    assert rerank_synth.nag_violations() == []
    assert rerank_synth.cfn_lint_findings() == []


def test_the_stack_knows_the_adapters_models_and_regions() -> None:
    from episodic.aws import bedrock_reranker

    assert RERANK_MODEL_REGIONS == bedrock_reranker.RERANK_MODEL_REGIONS
    assert StackConfig().rerank_model_id in RERANK_MODEL_REGIONS and StackConfig().reranker == "none"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"reranker": "cohere"}, "reranker must be one of .none., .bedrock., .local."),
        (
            {"reranker": "bedrock", "rerankModelId": "amazon.titan-embed-text-v2:0"},
            "is not a Bedrock reranker",
        ),
    ],
)
def test_a_bad_reranker_context_is_refused(context: dict[str, str], message: str) -> None:
    app = cdk.App(context={**context, "bundle": "false"})
    with pytest.raises(ContextError, match=message):
        EpisodicStack(app, "Refused")


def test_a_region_without_the_model_fails_synth_with_the_fix() -> None:
    with pytest.raises(
        ContextError, match=r"not us-east-1: deploy with -c rerankModelId=cohere\.rerank-v3-5:0"
    ):
        StackConfig(reranker="bedrock").check_region("us-east-1")
    with pytest.raises(ContextError, match="deploy to one of"):
        StackConfig(reranker="bedrock").check_region("eu-west-1")
    StackConfig(reranker="bedrock").check_region("us-west-2")
    StackConfig(reranker="none").check_region("us-east-1")  # off: nothing to check
    app = cdk.App(context={"reranker": "bedrock", "bundle": "false"})
    with pytest.raises(ContextError, match="reranks only in"):
        EpisodicStack(app, "Refused", env=cdk.Environment(region="us-east-1"))
