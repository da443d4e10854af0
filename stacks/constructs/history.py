"""The history tools' storage: one DynamoDB table (per-session metadata and work-item links, keyed by
tenant) and the records under `history/` in the transcripts bucket; both Lambdas read it, the distill
Lambda writes records, the MCP Lambda appends links."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stacks.constructs.storage import Storage
from stacks.nag import acknowledge

HISTORY_PREFIX = "history/"
TABLE_READ_ACTIONS = ["dynamodb:GetItem", "dynamodb:Query"]
TABLE_ACTIONS = [*TABLE_READ_ACTIONS, "dynamodb:PutItem"]


def tenant_table(
    scope: Construct, storage: Storage, removal: RemovalPolicy, ttl_attribute: str | None = None
) -> dynamodb.Table:
    """A table keyed `pk` (the tenant first) and `sk`: on demand (no idle cost, queries are per tenant),
    encrypted with the stack's key, point-in-time recovery."""
    return dynamodb.Table(
        scope,
        "Table",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryption_key=storage.key,
        time_to_live_attribute=ttl_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=removal,
    )


class History(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: Storage,
        writer: lambda_.Function,
        reader: lambda_.Function,
        reader_writes: bool = True,  # False for a read-only deployment: no link items from the MCP Lambda
    ) -> None:
        super().__init__(scope, construct_id)
        # confirmed links are the user's (records can be rebuilt): the table is kept on delete
        self.table = tenant_table(self, storage, RemovalPolicy.RETAIN)
        records = storage.transcripts.arn_for_objects(f"{HISTORY_PREFIX}*")
        bucket_id = Stack.of(self).get_logical_id(storage.transcripts.node.default_child)  # type: ignore[arg-type]
        grants = (
            (writer, ["s3:GetObject", "s3:PutObject"], TABLE_ACTIONS),
            (reader, ["s3:GetObject"], TABLE_ACTIONS if reader_writes else TABLE_READ_ACTIONS),
        )
        for fn, object_actions, table_actions in grants:
            if fn.role is not None:
                acknowledge(
                    fn.role,
                    "AwsSolutions-IAM5",
                    "History records are objects under one prefix of one bucket (one per session, keyed "
                    "by tenant and session id): the prefix is the narrowest resource that names them.",
                    findings=[f"Resource::<{bucket_id}.Arn>/{HISTORY_PREFIX}*"],
                )
            fn.add_environment("EPISODIC_HISTORY_TABLE", self.table.table_name)
            fn.add_environment("EPISODIC_HISTORY_PREFIX", HISTORY_PREFIX)
            fn.add_to_role_policy(
                iam.PolicyStatement(actions=table_actions, resources=[self.table.table_arn])
            )
            fn.add_to_role_policy(iam.PolicyStatement(actions=object_actions, resources=[records]))
        if not reader_writes:
            return
        # the MCP Lambda writes link items into the CMK-encrypted table
        reader.add_to_role_policy(
            iam.PolicyStatement(
                actions=["kms:Encrypt", "kms:GenerateDataKey"], resources=[storage.key.key_arn]
            )
        )
