"""The injection store, both adapters through the port: tenant on every call and never crossed, a session's
given cards, uses written back, retention by age and by count per tenant."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from episodic.aws.dynamo_injections import DynamoInjectionStore
from episodic.injections.sqlite_store import SQLiteInjectionStore
from episodic.kernel.errors import InvalidArgumentError, TenantError
from episodic.kernel.injection_port import InjectionRecord, InjectionStore, prompt_hash

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def rec(tenant: str, session: str, card: str, tier: str = "card", *, days_ago: float = 0) -> InjectionRecord:
    return InjectionRecord(
        tenant_id=tenant,
        session_id=session,
        card_id=card,
        tier=tier,  # type: ignore[arg-type]
        source="prompt_hook",
        prompt_sha256=prompt_hash(f"{session}{card}"),
        chars=500,
        at=NOW - timedelta(days=days_ago),
    )


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InjectionStore]:
    if request.param == "sqlite":
        yield SQLiteInjectionStore(tmp_path / "injections.sqlite3")
        return
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="injections",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield DynamoInjectionStore(client, "injections")


def test_a_sessions_records_stay_with_its_tenant(store: InjectionStore) -> None:
    store.add("alpha", [rec("alpha", "s1", "c1"), rec("alpha", "s1", "c2", "pointer")])
    store.add("beta", [rec("beta", "s1", "c9")])
    assert store.given("alpha", "s1") == {"c1": {"card"}, "c2": {"pointer"}}
    assert store.given("beta", "s1") == {"c9": {"card"}}
    assert [r.card_id for r in store.since("beta")] == ["c9"]
    assert store.count("alpha") == 2 and store.count() == 3
    with pytest.raises(InvalidArgumentError):
        store.add("alpha", [rec("beta", "s2", "c1")])
    with pytest.raises(TenantError):
        store.of_session("", "s1")


def test_the_same_giving_recorded_twice_is_one_record(store: InjectionStore) -> None:
    store.add("alpha", [rec("alpha", "s1", "c1")])
    store.add("alpha", [rec("alpha", "s1", "c1")])
    assert store.count("alpha") == 1


def test_uses_are_written_back_and_counted_per_card(store: InjectionStore) -> None:
    first, second = rec("alpha", "s1", "c1"), rec("alpha", "s2", "c1", "pointer", days_ago=1)
    store.add("alpha", [first, second, rec("alpha", "s2", "c2")])
    store.set_uses("alpha", "s1", {first.record_id: ("opened", "opened:get_episode", "codex")})
    store.set_uses("alpha", "s2", {second.record_id: ("ignored", "", "claude-code")})
    (read,) = [r for r in store.of_session("alpha", "s1")]
    assert (read.use, read.use_detail, read.agent) == ("opened", "opened:get_episode", "codex")
    uses = store.uses_of_cards("alpha", ["c1", "c3"])
    assert set(uses) == {"c1"}
    assert (uses["c1"].given, uses["c1"].pointers, uses["c1"].used, uses["c1"].opened, uses["c1"].read) == (
        2,
        1,
        1,
        1,
        2,
    )
    assert store.uses_of_cards("beta", ["c1"]) == {}


def test_retention_drops_old_records_and_each_tenants_oldest_beyond_the_cap(store: InjectionStore) -> None:
    store.add("alpha", [rec("alpha", "s1", f"c{n}", days_ago=n) for n in range(5)])
    store.add("alpha", [rec("alpha", "s2", "old", days_ago=100)])
    store.add("beta", [rec("beta", "s1", f"b{n}", days_ago=n) for n in range(2)])
    gone = store.expire(NOW - timedelta(days=90), keep_per_tenant=3)
    assert gone == 3
    assert sorted(r.card_id for r in store.since("alpha")) == ["c0", "c1", "c2"]
    assert store.count("beta") == 2


def test_a_forgotten_session_takes_its_records(store: InjectionStore) -> None:
    store.add("alpha", [rec("alpha", "s1", "c1"), rec("alpha", "s2", "c1")])
    assert store.delete_session("alpha", "s1") == 1
    assert store.given("alpha", "s1") == {} and store.count("alpha") == 1
