"""Least-privilege statements the grant_* helpers do not cover: Bedrock models and S3 Vectors actions."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from stacks.config import StackConfig

# the store's write path (put/replace/delete a session's vectors) and its read path
VECTOR_WRITE_ACTIONS = (
    "s3vectors:PutVectors",
    "s3vectors:GetVectors",
    "s3vectors:DeleteVectors",
    "s3vectors:ListVectors",
    "s3vectors:QueryVectors",
    "s3vectors:GetIndex",
)
# QueryVectors with a filter or returnMetadata also needs GetVectors
VECTOR_READ_ACTIONS = (
    "s3vectors:QueryVectors",
    "s3vectors:GetVectors",
    "s3vectors:ListVectors",
    "s3vectors:GetIndex",
)

# the MCP function's write-scope tools (review_episode, record_episode) rewrite a session's vectors in place
VECTOR_REVIEW_ACTIONS = ("s3vectors:PutVectors",)


def vector_statement(index_arn: str, actions: tuple[str, ...]) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=list(actions), resources=[index_arn])


def transcript_read_statements(config: StackConfig, bucket: s3.IBucket) -> list[iam.PolicyStatement]:
    """Read a session's uploaded transcript: its objects, and a listing of its own prefix (subagent files)."""
    return [
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{config.transcripts_prefix}*")]
        ),
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{config.transcripts_prefix}*"]}},
        ),
    ]


def titan_statement(config: StackConfig) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        actions=["bedrock:InvokeModel"],
        resources=[f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{config.titan_model_id}"],
    )


def distiller_statements(config: StackConfig) -> list[iam.PolicyStatement]:
    """InvokeModel (Converse) on the inference profile and, only through it, on its foundation models."""
    partition, region, account = Aws.PARTITION, Aws.REGION, Aws.ACCOUNT_ID
    if not config.uses_inference_profile:
        return [
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[f"arn:{partition}:bedrock:{region}::foundation-model/{config.bedrock_model_id}"],
            )
        ]
    profile_arn = f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{config.bedrock_model_id}"
    model = config.foundation_model_id
    # a cross-region profile routes to any region of its geography; a global one names no region
    model_arns = [
        f"arn:{partition}:bedrock:*::foundation-model/{model}",
        f"arn:{partition}:bedrock:::foundation-model/{model}",
    ]
    return [
        iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[profile_arn]),
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=model_arns,
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}},
        ),
    ]


def rerank_statements(config: StackConfig) -> list[iam.PolicyStatement]:
    """Bedrock Rerank: the action has no resource-level permission (the reranking permissions page grants it
    on "*"); what it may run is held by InvokeModel, scoped to the one reranker model."""
    return [
        iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]),
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[
                f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{config.rerank_model_id}"
            ],
        ),
    ]
