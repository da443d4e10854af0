"""The injection records' table: on demand, encrypted with the stack's key, expired by its TTL attribute;
both Lambdas are told its name, the MCP Lambda records (Query, BatchWriteItem), only the distill Lambda
also scans it (retention)."""

from __future__ import annotations

from conftest import Synth


def test_the_injections_table_and_who_may_do_what(default_synth: Synth) -> None:
    tables = {
        n: r for n, r in default_synth.resources("AWS::DynamoDB::Table").items() if n.startswith("Injections")
    }
    assert len(tables) == 1
    name, table = next(iter(tables.items()))
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST" and props["SSESpecification"]["SSEType"] == "KMS"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    told = [
        fn
        for fn in default_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"].get("Environment", {}).get("Variables", {}).get("EPISODIC_INJECTIONS_TABLE")
        == {"Ref": name}
    ]
    assert len(told) == 2
    statements = [
        s
        for policy in default_synth.resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if name in str(s["Resource"])
    ]
    actions = sorted(
        sorted(s["Action"] if isinstance(s["Action"], list) else [s["Action"]]) for s in statements
    )
    assert actions == [
        ["dynamodb:BatchWriteItem", "dynamodb:Query"],
        ["dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:Scan"],
    ]
