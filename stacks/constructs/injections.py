"""The injection records' table (episodic.aws.dynamo_injections): what memory gave each session and what the
session did with it, one partition per tenant, expired by the table's TTL and by the retention setting. The
MCP Lambda records what it gives; the distill Lambda reads each indexed session's records and applies
the retention."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stacks.constructs.history import tenant_table
from stacks.constructs.storage import Storage

READ_ACTIONS = ["dynamodb:Query"]
WRITE_ACTIONS = ["dynamodb:BatchWriteItem"]
SWEEP_ACTIONS = ["dynamodb:Scan"]  # retention walks every tenant's partition


class InjectionRecords(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: Storage,
        writer: lambda_.Function,
        reader: lambda_.Function,
        reader_writes: bool = True,  # False for a read-only deployment: the MCP Lambda records nothing
    ) -> None:
        super().__init__(scope, construct_id)
        # measurements, rebuilt as sessions go on: deleted with the stack
        self.table = tenant_table(self, storage, RemovalPolicy.DESTROY, ttl_attribute="expires_at")
        grants = (
            (writer, READ_ACTIONS + WRITE_ACTIONS + SWEEP_ACTIONS),
            (reader, READ_ACTIONS + (WRITE_ACTIONS if reader_writes else [])),
        )
        for fn, actions in grants:
            fn.add_environment("EPISODIC_INJECTIONS_TABLE", self.table.table_name)
            fn.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=[self.table.table_arn]))
            if actions != READ_ACTIONS:
                fn.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["kms:Encrypt", "kms:GenerateDataKey"], resources=[storage.key.key_arn]
                    )
                )
