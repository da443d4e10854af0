"""`-c scratchMemory=opensearch`: a VECTORSEARCH collection with its three policy kinds, the data-access
split by role (indexer writes/creates, retriever reads/describes), cdk-nag clean, cfn-lint clean; off by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Synth, synth

from stacks.constructs.scratch_memory import INDEXER_PERMISSIONS, RETRIEVER_PERMISSIONS


@pytest.fixture(scope="module")
def scratch_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(tmp_path_factory.mktemp("cdk-scratch"), scratchMemory="opensearch")


def _role_logical_id(template: dict, fragment: str) -> str:
    (found,) = [
        k for k, v in template["Resources"].items() if v["Type"] == "AWS::IAM::Role" and fragment in k
    ]
    return found


def _principals(policy: dict) -> list:
    return [p for statement in json.loads(json.dumps(policy)) for p in statement["Principal"]]


def test_off_by_default(default_synth: Synth) -> None:
    assert default_synth.resources("AWS::OpenSearchServerless::Collection") == {}


def test_a_vector_collection_with_encryption_and_network_policies(scratch_synth: Synth) -> None:
    (collection,) = scratch_synth.resources("AWS::OpenSearchServerless::Collection").values()
    assert collection["Properties"]["Type"] == "VECTORSEARCH"
    name = collection["Properties"]["Name"]
    policies = {
        p["Properties"]["Type"]: p
        for p in scratch_synth.resources("AWS::OpenSearchServerless::SecurityPolicy").values()
    }
    assert set(policies) == {"encryption", "network"}
    encryption = json.loads(policies["encryption"]["Properties"]["Policy"])
    assert encryption["AWSOwnedKey"] is True
    assert encryption["Rules"] == [{"ResourceType": "collection", "Resource": [f"collection/{name}"]}]
    (network,) = json.loads(policies["network"]["Properties"]["Policy"])
    assert [r["ResourceType"] for r in network["Rules"]] == ["collection"]  # no dashboard access
    assert {p["Properties"]["Name"] for p in policies.values()} <= {f"{name}-enc", f"{name}-net"}
    depends = collection.get("DependsOn", [])
    assert len([d for d in depends if "Encryption" in d or "Network" in d]) == 2


def test_data_access_is_split_by_role(scratch_synth: Synth) -> None:
    access = {
        p["Properties"]["Name"].rsplit("-", 1)[-1]: json.loads(p["Properties"]["Policy"]) if isinstance(p["Properties"]["Policy"], str) else p["Properties"]["Policy"]
        for p in scratch_synth.resources("AWS::OpenSearchServerless::AccessPolicy").values()
    }  # fmt: skip
    assert set(access) == {"indexer", "retriever"}
    template = json.dumps(scratch_synth.resources("AWS::OpenSearchServerless::AccessPolicy"))
    distill_role = _role_logical_id(scratch_synth.template, "IngestDistillRole")
    mcp_role = _role_logical_id(scratch_synth.template, "ServingMcpRole")
    assert distill_role in template and mcp_role in template
    raw = {
        p["Properties"]["Name"].rsplit("-", 1)[-1]: json.dumps(p["Properties"]["Policy"])
        for p in scratch_synth.resources("AWS::OpenSearchServerless::AccessPolicy").values()
    }
    assert distill_role in raw["indexer"] and mcp_role not in raw["indexer"]
    assert mcp_role in raw["retriever"] and distill_role not in raw["retriever"]
    for who, wanted in (("indexer", INDEXER_PERMISSIONS), ("retriever", RETRIEVER_PERMISSIONS)):
        for permission in wanted:
            assert permission in raw[who]
    for forbidden in ("aoss:WriteDocument", "aoss:CreateIndex", "aoss:DeleteIndex", "aoss:UpdateIndex"):
        assert forbidden not in raw["retriever"]
    assert "aoss:DeleteIndex" not in raw["indexer"]


def test_both_lambdas_get_the_endpoint_and_only_api_access_on_the_collection(scratch_synth: Synth) -> None:
    functions = scratch_synth.resources("AWS::Lambda::Function")
    with_scratch = [
        f
        for f in functions.values()
        if "EPISODIC_SCRATCH_STORE" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert len(with_scratch) == 2
    for fn in with_scratch:
        variables = fn["Properties"]["Environment"]["Variables"]
        assert variables["EPISODIC_SCRATCH_STORE"] == "opensearch"
        assert "CollectionEndpoint" in json.dumps(variables["EPISODIC_OPENSEARCH_ENDPOINT"])
    statements = [
        s for p in scratch_synth.resources("AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "aoss" in json.dumps(s["Action"])
    ]  # fmt: skip
    assert len(statements) == 2 and all(s["Action"] == "aoss:APIAccessAll" for s in statements)
    assert all("Collection" in json.dumps(s["Resource"]) for s in statements)


def test_a_daily_sweep_and_an_alarm_on_degraded_recall(scratch_synth: Synth) -> None:
    (rule,) = scratch_synth.resources("AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 day)"
    assert json.loads(rule["Properties"]["Targets"][0]["Input"]) == {"episodic": "scratch-sweep"}
    alarms = [
        a
        for a in scratch_synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ScratchRecallDegraded"
    ]
    assert len(alarms) == 1 and alarms[0]["Properties"]["Namespace"] == "Episodic"


def test_cdk_nag_and_cfn_lint_are_clean_with_scratch_memory(scratch_synth: Synth) -> None:
    from cfnlint.api import ManualArgs, lint_file

    report = json.loads((scratch_synth.outdir / "validation-report.json").read_text())
    assert [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])] == []
    template = scratch_synth.outdir / f"{scratch_synth.stack.artifact_id}.template.json"
    matches = lint_file(Path(template), ManualArgs(regions=["us-east-1"]))
    remaining = [
        f"{m.rule.id} {m.message}"
        for m in matches
        if m.rule.id not in {"W3005"} and "TextSearchConfigurations" not in m.message
    ]
    assert remaining == []


def test_cards_can_move_to_the_collection_too(tmp_path: Path) -> None:
    both = synth(tmp_path, nag=False, scratchMemory="opensearch", cardStore="opensearch")
    stores = {
        fn["Properties"]["Environment"]["Variables"].get("EPISODIC_STORE")
        for fn in both.resources("AWS::Lambda::Function").values()
        if "EPISODIC_SCRATCH_STORE" in fn["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert stores == {"opensearch"}


def test_cards_on_opensearch_need_the_collection() -> None:
    from stacks.config import ContextError, StackConfig

    with pytest.raises(ContextError, match="scratchMemory=opensearch"):
        StackConfig(card_store="opensearch")
    with pytest.raises(ContextError, match="cardStore"):
        StackConfig(scratch_memory="opensearch", card_store="dynamo")
