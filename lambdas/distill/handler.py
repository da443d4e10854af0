"""Distill Lambda: an SQS batch of S3 object-created events -> one card per new transcript.

Thin: parse the S3 notifications, call the core (`episodic.aws.pipeline`), shape a partial-batch answer.
A record that raises is reported in `batchItemFailures`; after 3 receives SQS moves it to the DLQ, and its
reason is in the log line and in the failure record beside the transcripts. Idempotent on the content
hash (Powertools, DynamoDB): a redelivered event for unchanged bytes never reaches Bedrock again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from episodic.assembly import build_memory
from episodic.aws.clients import AwsClients
from episodic.aws.pipeline import DEFAULT_CARDS_PREFIX, TranscriptObject, distill_transcript, fetch_transcript
from episodic.aws.search_mode import store_search_mode
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings, load_deployed_settings
from pydantic import BaseModel

logger = Logger()
metrics = Metrics(namespace="Episodic")
tracer = Tracer()
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
# the same bytes for the same tenant within a day are one distillation, however often S3/SQS redeliver
IDEMPOTENCY = IdempotencyConfig(
    event_key_jmespath="[tenant_id, content_sha256]", expires_after_seconds=24 * 3600
)


class _S3Bucket(BaseModel):
    name: str


class _S3Object(BaseModel):
    key: str


class _S3Entity(BaseModel):
    bucket: _S3Bucket
    object: _S3Object


class _S3Record(BaseModel):
    eventName: str
    s3: _S3Entity


class S3Notification(BaseModel):
    """The part of an S3 event notification the handler uses (Powertools' S3Model also demands fields,
    such as userIdentity, that only matter for auditing)."""

    Records: list[_S3Record]


@dataclass
class DistillRuntime:
    """Everything the handler needs, built at init in Lambda (on first use elsewhere), replaceable by tests."""

    settings: Settings
    memory: Memory
    s3: Any
    idempotency: DynamoDBPersistenceLayer
    cards_prefix: str = DEFAULT_CARDS_PREFIX

    def __post_init__(self) -> None:
        @idempotent_function(
            data_keyword_argument="transcript", persistence_store=self.idempotency, config=IDEMPOTENCY
        )
        def distill_once(transcript: dict[str, str], obj: TranscriptObject) -> dict[str, Any]:
            outcome = distill_transcript(
                obj, memory=self.memory, s3_client=self.s3, cards_prefix=self.cards_prefix
            )
            return outcome.summary()

        self.distill_once = distill_once


_runtime: DistillRuntime | None = None


def build_runtime(settings: Settings | None = None, clients: AwsClients | None = None) -> DistillRuntime:
    settings = settings or load_deployed_settings()  # a missing variable fails the cold start, by name
    clients = clients or AwsClients(settings)
    memory = build_memory(settings, clients=clients)
    store_search_mode(memory.store, log=logger)  # the cards it writes are searched in this mode
    return DistillRuntime(
        settings=settings,
        memory=memory,
        s3=clients.get("s3"),
        idempotency=DynamoDBPersistenceLayer(table_name=settings.idempotency_table),
        cards_prefix=settings.cards_prefix,
    )


def runtime() -> DistillRuntime:
    global _runtime
    if _runtime is None:
        _runtime = build_runtime()
    return _runtime


def set_runtime(value: DistillRuntime | None) -> None:
    """Tests inject moto/stubbed clients here; None rebuilds from settings on the next event."""
    global _runtime
    _runtime = value


def s3_objects(body: str) -> list[tuple[str, str]]:
    """(bucket, key) pairs from one SQS message body holding an S3 event notification."""
    payload = json.loads(body)
    if payload.get("Event") == "s3:TestEvent":  # sent once when the notification is configured
        return []
    event = parse(event=payload, model=S3Notification)
    # keys arrive URL-encoded (spaces as '+')
    return [
        (r.s3.bucket.name, unquote_plus(r.s3.object.key))
        for r in event.Records
        if r.eventName.startswith("ObjectCreated")
    ]


def _log_failure(record: SQSRecord, bucket: str, key: str, exc: Exception) -> None:
    # the reason travels with the message id; after 3 receives the message is in the DLQ
    logger.error(
        "transcript not distilled",
        extra={
            "bucket": bucket,
            "key": key,
            "reason": f"{type(exc).__name__}: {exc}",
            "message_id": record.message_id,
            "receive_count": record.attributes.approximate_receive_count,
        },
    )
    metrics.add_metric(name="DistillFailures", unit=MetricUnit.Count, value=1)


@tracer.capture_method
def record_handler(record: SQSRecord) -> None:
    rt = runtime()
    try:
        objects = s3_objects(record.body)
    except Exception as exc:  # not an S3 notification: a poison message, logged with its reason
        _log_failure(record, "", "", exc)
        raise
    for bucket, key in objects:
        try:
            transcript = fetch_transcript(rt.s3, bucket, key, prefix=rt.settings.transcripts_prefix)
            if transcript is None:
                logger.info("subagent file: folded into its parent session", extra={"key": key})
                continue
            summary = rt.distill_once(transcript=transcript.idempotency_payload(), obj=transcript)
        except Exception as exc:
            _log_failure(record, bucket, key, exc)
            raise
        logger.info("transcript processed", extra=summary)
        metric = "CardsIndexed" if summary.get("status") == "indexed" else "TranscriptsNotIndexed"
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("episodic") == "scratch-sweep":  # the daily schedule (-c scratchMemory=opensearch)
        from episodic.core.ingest import sweep_features

        removed = sweep_features(runtime().memory)
        logger.info("scratch memory swept", extra={"removed": removed})
        return {"swept": removed}
    IDEMPOTENCY.register_lambda_context(context)
    response: dict[str, Any] = dict(
        process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )
    return response


if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):  # in Lambda: build (and log the search mode) at init
    _runtime = build_runtime()
