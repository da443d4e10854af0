"""Card archive beside the transcripts, against moto S3."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.aws.card_archive import archive_card, card_key, load_archived_cards
from episodic.kernel.errors import InvalidArgumentError, InvalidCardError
from episodic.kernel.models import Card, CardRecord, DistillerInfo, DistillUsage, Outcome
from moto import mock_aws

BUCKET = "transcripts-bucket"


def record(session: str, tenant: str = "acme", problem: str = "Flaky test on CI only") -> CardRecord:
    return CardRecord(
        card=Card(
            problem=problem, steps=["Reran with the CI seed"], outcome=Outcome.VERIFIED, tags=["pytest"]
        ),
        session_id=session,
        tenant_id=tenant,
        source_sha256="b" * 64,
        distiller=DistillerInfo(kind="bedrock", model="us.anthropic.claude-sonnet-4-6"),
        usage=DistillUsage(input_tokens=4000, output_tokens=500, cost_usd=0.0195),
    )


@pytest.fixture()
def s3(episodic_home: Path) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_archive_and_load_round_trip(s3: Any) -> None:
    assert archive_card(s3, BUCKET, record("s1")) == "cards/acme/s1.json"
    archive_card(s3, BUCKET, record("s2"))
    archive_card(s3, BUCKET, record("s9", tenant="beta"))
    archive_card(s3, BUCKET, record("s1", problem="Replaced card"))  # same session: replaced
    assert {r.session_id for r in load_archived_cards(s3, BUCKET, tenant_id="acme")} == {"s1", "s2"}
    everything = {(r.tenant_id, r.session_id): r for r in load_archived_cards(s3, BUCKET)}
    assert set(everything) == {("acme", "s1"), ("acme", "s2"), ("beta", "s9")}
    assert everything[("acme", "s1")].card.problem == "Replaced card"
    assert everything[("acme", "s1")].usage.cost_usd == pytest.approx(0.0195)


def test_sse_kms_when_a_key_is_given(s3: Any) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    key = archive_card(s3, BUCKET, record("s1"), kms_key_id=key_id)
    head = s3.head_object(Bucket=BUCKET, Key=key)
    assert head["ServerSideEncryption"] == "aws:kms" and key_id in head["SSEKMSKeyId"]
    assert head["ContentType"] == "application/json"


def test_unreadable_objects_are_reported_not_lost(s3: Any) -> None:
    archive_card(s3, BUCKET, record("s1"))
    s3.put_object(Bucket=BUCKET, Key="cards/acme/broken.json", Body=b"{not json")
    s3.put_object(Bucket=BUCKET, Key="cards/acme/notes.txt", Body=b"ignored")
    with pytest.raises(InvalidCardError, match=r"broken\.json"):
        list(load_archived_cards(s3, BUCKET))
    errors: list[str] = []
    assert [r.session_id for r in load_archived_cards(s3, BUCKET, errors=errors)] == ["s1"]
    assert len(errors) == 1 and "broken.json" in errors[0]


def test_keys_cannot_escape_the_prefix() -> None:
    with pytest.raises(InvalidArgumentError):
        card_key("acme", "../other")
    with pytest.raises(InvalidArgumentError):
        card_key("", "s1")
    assert card_key("acme", "s1", prefix="archive/cards/") == "archive/cards/acme/s1.json"
