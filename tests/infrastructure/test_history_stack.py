"""The history table: on demand, encrypted with the stack's key, point-in-time recovery, kept on delete;
both Lambdas are told its name and may read it, only the distill Lambda writes records."""

from __future__ import annotations

from typing import Any

from conftest import Synth


def _history_table(default_synth: Synth) -> tuple[str, dict[str, Any]]:
    tables = {
        name: res
        for name, res in default_synth.resources("AWS::DynamoDB::Table").items()
        if [k["AttributeName"] for k in res["Properties"]["KeySchema"]] == ["pk", "sk"]
        and name.startswith("History")
    }
    assert len(tables) == 1
    return next(iter(tables.items()))


def test_history_table_is_on_demand_encrypted_and_retained(default_synth: Synth) -> None:
    _, table = _history_table(default_synth)
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"]["SSEEnabled"] is True and props["SSESpecification"]["SSEType"] == "KMS"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


def test_both_functions_know_the_table_and_only_distill_writes_records(default_synth: Synth) -> None:
    name, _ = _history_table(default_synth)
    functions = default_synth.resources("AWS::Lambda::Function")
    told = [
        fid
        for fid, fn in functions.items()
        if fn["Properties"].get("Environment", {}).get("Variables", {}).get("EPISODIC_HISTORY_TABLE")
        == {"Ref": name}
    ]
    assert len(told) == 2
    statements = [
        s
        for policy in default_synth.resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    writes = [
        s
        for s in statements
        if "s3:PutObject" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    history_writes = [s for s in writes if "history/*" in str(s["Resource"])]
    assert len(history_writes) == 1
    table_access = [
        s for s in statements if "dynamodb:Query" in str(s["Action"]) and name in str(s["Resource"])
    ]
    assert len(table_access) == 2 and all("dynamodb:DeleteItem" not in str(s["Action"]) for s in table_access)
