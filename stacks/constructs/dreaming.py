"""Dreaming (context `dreaming=true`): EventBridge Scheduler -> the Dream Lambda once a week, writing each
tenant's records under `<dreamsPrefix><tenant>/` in the transcripts bucket with the Bedrock distiller."""

from __future__ import annotations

import json

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from stacks.config import StackConfig, core_environment
from stacks.constructs.functions import PythonFunction
from stacks.constructs.permissions import VECTOR_READ_ACTIONS, distiller_statements, vector_statement
from stacks.constructs.storage import Storage
from stacks.nag import acknowledge


class Dreaming(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, storage: Storage) -> None:
        super().__init__(scope, construct_id)
        environment = core_environment(
            config,
            vector_bucket=storage.names.vector_bucket,
            vector_index=config.vector_index_name,
            transcripts_bucket=storage.transcripts.bucket_name,
        )
        environment["EPISODIC_DREAMS_PREFIX"] = config.dreams_prefix
        self.dream = PythonFunction(
            self,
            "Dream",
            config=config,
            name="dream",
            key=storage.key,
            environment=environment,
            timeout=Duration.minutes(15),  # a week of sessions: up to ~10 Bedrock calls per tenant and week
            memory_size=1024,
            description="Weekly dream: one dated record per tenant and ISO week (EventBridge Scheduler)",
        )
        fn = self.dream.function
        fn.node.add_dependency(storage.index)
        transcripts = storage.transcripts
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[
                    transcripts.arn_for_objects(f"{config.transcripts_prefix}*"),
                    transcripts.arn_for_objects(f"{config.dreams_prefix}*"),
                ],
            )
        )
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[transcripts.arn_for_objects(f"{config.dreams_prefix}*")]
            )
        )
        fn.add_to_role_policy(  # tenants are the transcript prefixes; records are found by listing
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[transcripts.bucket_arn],
                conditions={
                    "StringLike": {
                        "s3:prefix": [
                            config.transcripts_prefix,
                            f"{config.transcripts_prefix}*",
                            f"{config.dreams_prefix}*",
                        ]
                    }
                },
            )
        )
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
                resources=[storage.key.key_arn],
            )
        )
        fn.add_to_role_policy(
            vector_statement(storage.index_arn, VECTOR_READ_ACTIONS)
        )  # the index: read only
        for statement in distiller_statements(config):
            fn.add_to_role_policy(statement)

        self.invoker = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description=f"{config.name_prefix} weekly dream schedule",
        )
        self.invoker.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[fn.function_arn])
        )
        self.schedule = scheduler.CfnSchedule(
            self,
            "Weekly",
            description="episodic: the weekly dream of every tenant",
            schedule_expression=config.dream_schedule,
            schedule_expression_timezone="UTC",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=fn.function_arn,
                role_arn=self.invoker.role_arn,
                input=json.dumps({}),  # no tenants named: every tenant with transcripts
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(maximum_retry_attempts=0),
            ),
            state="ENABLED",
        )
        bucket_id = Stack.of(self).get_logical_id(transcripts.node.default_child)  # type: ignore[arg-type]
        acknowledge(
            self.dream.role,
            "AwsSolutions-IAM5",
            "Object actions are scoped to one prefix each of one bucket (read transcripts, read and write "
            "dream records); a cross-region inference profile routes to its foundation model in any region "
            "of its geography, allowed only through that profile (bedrock:InferenceProfileArn condition).",
            findings=[
                *(
                    f"Resource::<{bucket_id}.Arn>/{p}*"
                    for p in (config.transcripts_prefix, config.dreams_prefix)
                ),
                *(
                    [
                        f"Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{config.foundation_model_id}"
                    ]
                    if config.uses_inference_profile
                    else []
                ),
            ],
        )


def grant_records_read(function: object, config: StackConfig, storage: Storage, role: iam.IRole) -> None:
    """The MCP Lambda serves `get_dream_record`: read-only on the records' prefix."""
    transcripts = storage.transcripts
    fn = function  # lambda_.Function
    fn.add_to_role_policy(  # type: ignore[attr-defined]
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[transcripts.arn_for_objects(f"{config.dreams_prefix}*")]
        )
    )
    fn.add_to_role_policy(  # type: ignore[attr-defined]
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[transcripts.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{config.dreams_prefix}*"]}},
        )
    )
    bucket_id = Stack.of(transcripts).get_logical_id(transcripts.node.default_child)  # type: ignore[arg-type]
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "The MCP function reads dream records: GetObject on the one records prefix of the transcripts bucket.",
        findings=[f"Resource::<{bucket_id}.Arn>/{config.dreams_prefix}*"],
    )
