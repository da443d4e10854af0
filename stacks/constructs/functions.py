"""The one way this app builds a Python Lambda: arm64, Python 3.13, own role, own KMS-encrypted log group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from stacks import lambda_assets
from stacks.config import REPO_ROOT, StackConfig
from stacks.nag import acknowledge

SOURCE_DIR = REPO_ROOT / "lambdas"
RUNTIME = lambda_.Runtime.PYTHON_3_13
_ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc"]
# never pulled: the local bundler always answers, so CDK never falls back to Docker
_UNUSED_IMAGE = "public.ecr.aws/sam/build-python3.13"


@jsii.implements(cdk.ILocalBundling)
class LocalAssetBundler:
    """CDK local bundling: builds the asset on this machine (pip from the local wheelhouse, no Docker)."""

    def __init__(
        self, name: str, platform: lambda_assets.Platform = lambda_assets.LAMBDA, *, judge: bool = False
    ) -> None:
        self.name = name
        self.platform = platform
        self.judge = judge

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        lambda_assets.build_asset(self.name, Path(output_dir), self.platform, judge=self.judge)
        return True


def carries_judge(config: StackConfig, name: str) -> bool:
    """`-c reranker=local`: the MCP function (the read path) carries the judge; no other function searches."""
    return config.reranker == "local" and name == "mcp"


def lambda_code(scope: Construct, config: StackConfig, name: str) -> lambda_.Code:
    """Bundled during synth (cached in cdk.out by content hash); with `-c bundle=false`, the raw source."""
    if config.bundle:
        judge = carries_judge(config, name)
        # the custom hash is the content: an unchanged tree finds its asset.<hash> folder and is not rebuilt
        return lambda_.Code.from_asset(
            str(SOURCE_DIR / name),
            asset_hash=lambda_assets.content_hash(name, judge=judge),
            asset_hash_type=cdk.AssetHashType.CUSTOM,
            bundling=cdk.BundlingOptions(
                image=cdk.DockerImage.from_registry(_UNUSED_IMAGE),
                local=LocalAssetBundler(name, judge=judge),
            ),
        )
    Annotations.of(scope).add_warning_v2(
        "episodic:source-asset",
        f"{name}: source-only asset (bundle=false) without dependencies; fine for synth and tests, not for deploy.",
    )
    return lambda_.Code.from_asset(str(SOURCE_DIR / name), exclude=_ASSET_EXCLUDES)


class PythonFunction(Construct):
    """A thin handler from lambdas/<name>; permissions are added by the caller with grants."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        name: str,
        key: kms.IKey,
        environment: dict[str, str],
        timeout: Duration,
        memory_size: int,
        description: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            encryption_key=key,
            retention=_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # own role: no AWS managed policy, logs only to its own group
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{config.name_prefix} {name} function",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"lambdas.{name}.handler.handler",
            code=lambda_code(self, config, name),
            role=self.role,
            log_group=self.log_group,
            timeout=timeout,
            memory_size=memory_size,
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "POWERTOOLS_SERVICE_NAME": f"{config.name_prefix}-{name}",
                "POWERTOOLS_METRICS_NAMESPACE": "Episodic",
                "POWERTOOLS_LOG_LEVEL": "INFO",
                "EPISODIC_HOME": "/tmp/episodic",
                **environment,
            },
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions.",
            findings=["Resource::*"],
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "Pinned to Python 3.13: the asset's wheels are built for cp313 and the core is tested up to 3.13.",
        )


_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def _retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ValueError(f"logRetentionDays must be one of {sorted(_RETENTION)}, got {days}")
    return _RETENTION[days]
