"""The distill Lambda end to end on a local cloud: S3 put -> (moto) S3 notification -> SQS -> handler ->
Bedrock (Stubber) -> S3 Vectors (fake) + card archive; idempotent on redelivery; poison -> DLQ with reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from episodic.aws.pipeline import parse_transcript_key
from episodic.kernel.errors import InvalidArgumentError
from kits.lambda_env import (
    BUCKET,
    FIXTURE_SESSION,
    PREFIX,
    LambdaContext,
    LocalCloud,
    card,
    converse_reply,
    local_cloud,
    sqs_record,
)

from lambdas.distill import handler as distill


@pytest.fixture()
def cloud(episodic_home: Path) -> Iterator[LocalCloud]:
    with local_cloud(episodic_home) as c:
        yield c


def _drain_test_event(cloud: LocalCloud) -> None:
    """S3 sends one s3:TestEvent when the notification is configured; the handler must accept it."""
    result = cloud.poll_once(distill.handler)
    assert result == {"batchItemFailures": []}


def test_new_transcript_is_distilled_indexed_and_archived(cloud: LocalCloud) -> None:
    _drain_test_event(cloud)
    key = cloud.upload_session("acme")
    cloud.stub_converse(converse_reply(card()))

    result = cloud.poll_once(distill.handler)

    assert result == {"batchItemFailures": []}
    cloud.bedrock_stub.assert_no_pending_responses()
    record = distill.runtime().memory.store.get("acme", FIXTURE_SESSION)
    assert record is not None and record.tenant_id == "acme"
    assert record.card.problem.startswith("Phoenix dev server")
    assert record.distiller.kind == "bedrock" and record.usage.input_tokens == 4000
    assert distill.runtime().memory.store.get("other-tenant", FIXTURE_SESSION) is None
    # one vector per indexed rendering, all under the tenant, all written with put_vectors
    puts = [p for op, p in cloud.vectors.calls if op == "PutVectors"]
    keys = {v["key"] for p in puts for v in p["vectors"]}
    assert {k for k in keys if FIXTURE_SESSION in k} and all(
        "acme" in k for k in keys if FIXTURE_SESSION in k
    )
    archived = json.loads(
        cloud.s3.get_object(Bucket=BUCKET, Key=f"cards/acme/{FIXTURE_SESSION}.json")["Body"].read()
    )
    assert archived["card"]["problem"] == record.card.problem and archived["tenant_id"] == "acme"
    assert cloud.receive() == []  # the message was consumed
    assert key.startswith(PREFIX)


def test_redelivered_event_does_not_distill_twice(cloud: LocalCloud) -> None:
    _drain_test_event(cloud)
    cloud.upload_session("acme")
    messages = cloud.receive()
    # S3 also notified for the subagent files; the main file's event is the one that distils
    arn = cloud.sqs.get_queue_attributes(QueueUrl=cloud.queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    event = {"Records": [sqs_record(m, arn) for m in messages]}
    cloud.stub_converse(converse_reply(card()))  # exactly one Converse answer is available

    first = distill.handler(event, LambdaContext())
    second = distill.handler(event, LambdaContext())  # at-least-once delivery: the same batch again

    assert first == second == {"batchItemFailures": []}
    cloud.bedrock_stub.assert_no_pending_responses()  # a second Converse call would have raised
    items = cloud.dynamodb.scan(TableName="episodic-idempotency")["Items"]
    assert [i["status"]["S"] for i in items] == ["COMPLETED"]


def test_unchanged_bytes_under_a_new_event_are_not_distilled_again(cloud: LocalCloud) -> None:
    """Past the idempotency window, the core's own content-hash check still refuses a second distill."""
    _drain_test_event(cloud)
    cloud.upload_session("acme")
    cloud.stub_converse(converse_reply(card()))
    cloud.poll_once(distill.handler)
    cloud.dynamodb.delete_table(TableName="episodic-idempotency")  # idempotency records gone (TTL)
    cloud.dynamodb.create_table(
        TableName="episodic-idempotency",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    cloud.upload_session("acme")  # same bytes, new S3 event

    result = cloud.poll_once(distill.handler)

    assert result == {"batchItemFailures": []}
    cloud.bedrock_stub.assert_no_pending_responses()


def test_poison_transcript_ends_in_the_dead_letter_queue_with_its_reason(
    cloud: LocalCloud, caplog: pytest.LogCaptureFixture
) -> None:
    _drain_test_event(cloud)
    cloud.upload_session("acme")
    bad = card(problem="")  # schema-invalid every time, even after the repair turn
    for attempt in range(3):  # maxReceiveCount=3; each attempt = first call + one repair
        cloud.stub_converse(converse_reply(bad, f"tu-{attempt}a"), converse_reply(bad, f"tu-{attempt}b"))

    failures = [cloud.poll_once(distill.handler) for _ in range(3)]

    assert all(f is not None and len(f["batchItemFailures"]) == 1 for f in failures)
    cloud.bedrock_stub.assert_no_pending_responses()
    assert cloud.poll_once(distill.handler) is None  # the 4th receive moved it to the DLQ
    dead = cloud.receive(cloud.dlq_url)
    assert len(dead) == 1
    dead_key = unquote_plus(json.loads(dead[0]["Body"])["Records"][0]["s3"]["object"]["key"])
    assert dead_key == f"{PREFIX}acme/{FIXTURE_SESSION}.jsonl"
    failure = json.loads(
        cloud.s3.get_object(Bucket=BUCKET, Key=f"failures/acme/{FIXTURE_SESSION}.json")["Body"].read()
    )
    assert failure["tenant_id"] == "acme" and "problem" in failure["reason"]
    errors = [r.__dict__ for r in caplog.records if r.getMessage() == "transcript not distilled"]
    assert len(errors) == 3 and all(e["key"].endswith(f"{FIXTURE_SESSION}.jsonl") for e in errors)
    assert all("problem" in e["reason"] for e in errors) and {str(e["receive_count"]) for e in errors} == {
        "1",
        "2",
        "3",
    }
    assert distill.runtime().memory.store.get("acme", FIXTURE_SESSION) is None


def test_a_key_outside_the_layout_is_a_failure_not_a_guess(cloud: LocalCloud) -> None:
    _drain_test_event(cloud)
    cloud.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}no-tenant.jsonl", Body=b"{}")

    result = cloud.poll_once(distill.handler)

    assert result is not None and len(result["batchItemFailures"]) == 1
    with pytest.raises(InvalidArgumentError, match="does not follow"):
        parse_transcript_key(f"{PREFIX}no-tenant.jsonl", PREFIX)


def test_transcript_key_layout() -> None:
    where = parse_transcript_key("transcripts/acme/abc.jsonl", "transcripts/")
    assert where is not None and (where.tenant_id, where.session_key) == ("acme", "abc")
    assert parse_transcript_key("transcripts/acme/abc/subagents/agent-1.jsonl", "transcripts/") is None
    for bad in (
        "cards/acme/abc.jsonl",
        "transcripts/../abc.jsonl",
        "transcripts/a/b/c.jsonl",
        "transcripts/acme/.jsonl",
    ):
        with pytest.raises(InvalidArgumentError):
            parse_transcript_key(bad, "transcripts/")


def test_a_message_that_is_not_an_s3_notification_fails_with_its_reason_logged(
    cloud: LocalCloud, caplog: pytest.LogCaptureFixture
) -> None:
    _drain_test_event(cloud)
    cloud.sqs.send_message(QueueUrl=cloud.queue_url, MessageBody="not json at all")

    result = cloud.poll_once(distill.handler)

    assert result is not None and len(result["batchItemFailures"]) == 1
    errors = [r.__dict__ for r in caplog.records if r.getMessage() == "transcript not distilled"]
    assert len(errors) == 1 and "JSONDecodeError" in errors[0]["reason"]
