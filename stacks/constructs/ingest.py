"""Ingest: new transcripts (S3 events) -> SQS (KMS, DLQ) -> the distill Lambda, idempotent on content hash."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda_event_sources as events
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config import StackConfig, core_environment
from stacks.constructs.functions import PythonFunction
from stacks.constructs.permissions import (
    VECTOR_WRITE_ACTIONS,
    distiller_statements,
    titan_statement,
    transcript_read_statements,
    vector_statement,
)
from stacks.constructs.storage import Storage
from stacks.nag import acknowledge

MAX_RECEIVE_COUNT = 3
BATCHING_WINDOW = Duration.seconds(10)


class Ingest(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, storage: Storage) -> None:
        super().__init__(scope, construct_id)
        key = storage.key
        # the queues get their own key: S3 notifications add a key-policy grant naming the bucket, and the
        # bucket is encrypted with the storage key, so sharing it would make a dependency cycle
        self.queue_key = kms.Key(
            self,
            "QueueKey",
            description=f"{config.name_prefix}: ingest queues (S3 event notifications)",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        timeout = Duration.seconds(config.distill_timeout_seconds)

        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=self.queue_key,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=self.queue_key,
            enforce_ssl=True,
            retention_period=Duration.days(4),
            # AWS guidance: at least 6x the function timeout plus the batching window
            visibility_timeout=Duration.seconds(
                6 * config.distill_timeout_seconds + BATCHING_WINDOW.to_seconds()
            ),
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVE_COUNT, queue=self.dead_letters
            ),
        )

        self.idempotency = dynamodb.Table(
            self,
            "Idempotency",
            table_name=storage.names.idempotency_table,
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expiration",
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,  # only dedup records with a TTL: safe to lose
        )

        environment = core_environment(
            config,
            vector_bucket=storage.names.vector_bucket,
            vector_index=config.vector_index_name,
            transcripts_bucket=storage.transcripts.bucket_name,
        )
        environment.update(
            {
                "EPISODIC_IDEMPOTENCY_TABLE": self.idempotency.table_name,
                "EPISODIC_CARDS_PREFIX": config.cards_prefix,
                "EPISODIC_FAILURES_PREFIX": config.failures_prefix,
            }
        )
        self.distill = PythonFunction(
            self,
            "Distill",
            config=config,
            name="distill",
            key=key,
            environment=environment,
            timeout=timeout,
            memory_size=1024,
            description="Distils new transcripts into cards (SQS batch of S3 events)",
        )
        fn = self.distill.function
        fn.node.add_dependency(storage.index)

        transcripts = storage.transcripts
        # exact object actions on exact prefixes (the grant_* helpers would add GetObject*, List*, Abort*)
        for statement in transcript_read_statements(config, transcripts):
            fn.add_to_role_policy(statement)
        fn.add_to_role_policy(  # a failure record is cleared once the session is distilled
            iam.PolicyStatement(
                actions=["s3:DeleteObject"],
                resources=[transcripts.arn_for_objects(f"{config.failures_prefix}*")],
            )
        )
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"],
                resources=[
                    transcripts.arn_for_objects(f"{config.cards_prefix}*"),
                    transcripts.arn_for_objects(f"{config.failures_prefix}*"),
                ],
            )
        )
        fn.add_to_role_policy(
            # SSE-KMS objects (with a bucket key) and the CMK-encrypted idempotency table
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
                resources=[key.key_arn],
            )
        )
        # what Powertools' DynamoDB persistence layer calls, nothing more
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ],
                resources=[self.idempotency.table_arn],
            )
        )
        fn.add_to_role_policy(vector_statement(storage.index_arn, VECTOR_WRITE_ACTIONS))
        fn.add_to_role_policy(titan_statement(config))
        for statement in distiller_statements(config):
            fn.add_to_role_policy(statement)

        fn.add_event_source(
            events.SqsEventSource(
                self.queue,
                batch_size=config.distill_batch_size,
                max_batching_window=BATCHING_WINDOW,
                report_batch_item_failures=True,
                # caps concurrent pollers (not reserved concurrency): protects the Bedrock quota
                max_concurrency=config.distill_max_concurrency,
            )
        )
        object_prefixes = (config.transcripts_prefix, config.cards_prefix, config.failures_prefix)
        bucket_id = Stack.of(self).get_logical_id(transcripts.node.default_child)  # type: ignore[arg-type]
        acknowledge(
            self.distill.role,
            "AwsSolutions-IAM5",
            "Object actions are scoped to one prefix each of one bucket (read transcripts, write cards and "
            "failure records); a cross-region inference profile routes to its foundation model in any region "
            "of its geography, allowed only through that profile (bedrock:InferenceProfileArn condition).",
            findings=[
                *(f"Resource::<{bucket_id}.Arn>/{prefix}*" for prefix in object_prefixes),
                *(
                    [
                        f"Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{config.foundation_model_id}"
                    ]
                    if config.uses_inference_profile
                    else []
                ),
            ],
        )
        transcripts.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            s3n.SqsDestination(self.queue),
            s3.NotificationKeyFilter(prefix=config.transcripts_prefix, suffix=".jsonl"),
        )
