"""Serving: an HTTP API whose every route sits behind a bearer-token Lambda authorizer, in front of the
MCP Lambda on an alias (provisioned concurrency from context; 0 turns it off)."""

from __future__ import annotations

import json

import jsii
from aws_cdk import Duration, RemovalPolicy, SecretValue, Stack
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks.config import StackConfig, core_environment
from stacks.constructs.functions import PythonFunction
from stacks.constructs.permissions import (
    VECTOR_READ_ACTIONS,
    VECTOR_REVIEW_ACTIONS,
    rerank_statements,
    titan_statement,
    transcript_read_statements,
    vector_statement,
)
from stacks.constructs.storage import Storage
from stacks.lambda_assets import JUDGE_MODEL_FOLDER, LAMBDA_TASK_ROOT
from stacks.nag import acknowledge

MCP_PATH = "/mcp"
INTEGRATION_TIMEOUT = Duration.seconds(29)  # HTTP API's hard limit is 30 s
AUTHORIZER_CACHE_TTL = Duration.minutes(1)  # a revoked token passes until this and the secret cache expire


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogs:
    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigw.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        # never the Authorization header: only ids, route, status and timings
        return apigw_v1.AccessLogFormat.custom(
            json.dumps(
                {
                    "requestId": "$context.requestId",
                    "ip": "$context.identity.sourceIp",
                    "requestTime": "$context.requestTime",
                    "routeKey": "$context.routeKey",
                    "status": "$context.status",
                    "latencyMs": "$context.responseLatency",
                    "integrationLatencyMs": "$context.integrationLatency",
                    "authorizerError": "$context.authorizer.error",
                    "integrationError": "$context.integrationErrorMessage",
                }
            )
        )


class Serving(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, storage: Storage) -> None:
        super().__init__(scope, construct_id)
        key = storage.key

        # tokens -> tenants; only SHA-256 hashes are stored (`episodic token add --aws` writes them)
        self.tokens = secretsmanager.Secret(
            self,
            "Tokens",
            secret_name=storage.names.tokens_secret,
            description="episodic bearer tokens (SHA-256 hashes) mapped to tenants",
            encryption_key=key,
            secret_string_value=SecretValue.unsafe_plain_text(json.dumps({"version": 1, "tokens": []})),
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.tokens,
            "AwsSolutions-SMG4",
            "Holds hashes of static bearer tokens, issued and revoked per client with `episodic token`; "
            "there is no credential for Secrets Manager to rotate.",
        )

        self.authorizer_fn = PythonFunction(
            self,
            "Authorizer",
            config=config,
            name="authorizer",
            key=key,
            environment={"EPISODIC_AUTH_SECRET_ID": self.tokens.secret_arn},
            timeout=Duration.seconds(10),
            memory_size=256,
            description="HTTP API authorizer: bearer token -> tenant",
        )
        self.tokens.grant_read(self.authorizer_fn.function)

        environment = core_environment(
            config,
            vector_bucket=storage.names.vector_bucket,
            vector_index=config.vector_index_name,
            transcripts_bucket=storage.transcripts.bucket_name,
        )
        if config.read_only:
            environment["EPISODIC_READ_ONLY"] = "true"
        environment["EPISODIC_CARDS_PREFIX"] = config.cards_prefix
        if config.reranker == "bedrock":
            environment["EPISODIC_RERANKER"] = "bedrock"
            environment["EPISODIC_RERANK_MODEL_ID"] = config.rerank_model_id
        if config.reranker == "local":  # the judge and its model travel in this function's asset
            environment["EPISODIC_RERANKER"] = "local"
            environment["EPISODIC_JUDGE_MODEL_DIR"] = f"{LAMBDA_TASK_ROOT}/{JUDGE_MODEL_FOLDER}"
        self.mcp = PythonFunction(
            self,
            "Mcp",
            config=config,
            name="mcp",
            key=key,
            environment=environment,
            timeout=Duration.seconds(30),
            memory_size=1024,
            description="MCP endpoint (search_traces, get_episode) behind the HTTP API",
        )
        mcp_fn = self.mcp.function
        mcp_fn.node.add_dependency(storage.index)
        mcp_fn.add_to_role_policy(vector_statement(storage.index_arn, VECTOR_READ_ACTIONS))
        if not config.read_only:  # the write-scope tools (record/review) rewrite a session's vectors
            mcp_fn.add_to_role_policy(vector_statement(storage.index_arn, VECTOR_REVIEW_ACTIONS))
            self._grant_record_evidence(config, storage, mcp_fn)
        mcp_fn.add_to_role_policy(titan_statement(config))
        if config.reranker == "bedrock":
            self._grant_rerank(config, mcp_fn)
        key.grant_decrypt(mcp_fn)

        # provisioned concurrency on an alias keeps one instance warm; never together with SnapStart
        self.alias = lambda_.Alias(
            self,
            "Live",
            alias_name="live",
            version=mcp_fn.current_version,
            provisioned_concurrent_executions=config.provisioned_concurrency or None,
        )

        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            encryption_key=key,
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        authorizer = authorizers.HttpLambdaAuthorizer(
            "Bearer",
            self.authorizer_fn.function,
            response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
            identity_source=["$request.header.Authorization"],
            results_cache_ttl=AUTHORIZER_CACHE_TTL,
        )
        self.api = apigw.HttpApi(
            self,
            "Api",
            api_name=f"{config.name_prefix}-mcp",
            description="episodic MCP endpoint (bearer token per tenant)",
            create_default_stage=False,
            default_authorizer=authorizer,
        )
        self.stage = apigw.HttpStage(
            self,
            "Stage",
            http_api=self.api,
            stage_name="$default",
            auto_deploy=True,
            access_log_settings=_AccessLogs(self.access_logs),
            throttle=apigw.ThrottleSettings(rate_limit=50, burst_limit=100),
        )
        integration = integrations.HttpLambdaIntegration("Mcp", self.alias, timeout=INTEGRATION_TIMEOUT)
        # every route gets the default authorizer; GET/DELETE reach the handler for its 405 + Allow: POST
        self.api.add_routes(
            path=MCP_PATH,
            methods=[apigw.HttpMethod.POST, apigw.HttpMethod.GET, apigw.HttpMethod.DELETE],
            integration=integration,
        )
        # anything else (e.g. /.well-known/oauth-protected-resource) -> authenticated 404 from the handler
        self.api.add_routes(path="/{proxy+}", methods=[apigw.HttpMethod.ANY], integration=integration)

    @staticmethod
    def _grant_rerank(config: StackConfig, fn: lambda_.Function) -> None:
        """search_traces' second stage: Rerank, and InvokeModel on the one reranker model."""
        for statement in rerank_statements(config):
            fn.add_to_role_policy(statement)
        if fn.role is not None:
            acknowledge(
                fn.role,
                "AwsSolutions-IAM5",
                "bedrock:Rerank has no resource-level permission (the Bedrock reranking permissions page grants "
                "it on *); the model it can run is limited by bedrock:InvokeModel on the one reranker ARN.",
                findings=["Resource::*"],
            )

    @staticmethod
    def _grant_record_evidence(config: StackConfig, storage: Storage, fn: lambda_.Function) -> None:
        """record_episode reads the caller's uploaded transcript (evidence) and archives the card."""
        transcripts = storage.transcripts
        for statement in transcript_read_statements(config, transcripts):
            fn.add_to_role_policy(statement)
        fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[transcripts.arn_for_objects(f"{config.cards_prefix}*")]
            )
        )
        fn.add_to_role_policy(  # SSE-KMS objects with a bucket key
            iam.PolicyStatement(actions=["kms:GenerateDataKey"], resources=[storage.key.key_arn])
        )
        bucket_id = Stack.of(fn).get_logical_id(transcripts.node.default_child)  # type: ignore[arg-type]
        if fn.role is not None:
            acknowledge(
                fn.role,
                "AwsSolutions-IAM5",
                "record_episode reads the caller's uploaded transcript and archives its card: one prefix each "
                "of one bucket (the tenant is only known per request, from the authorizer).",
                findings=[
                    f"Resource::<{bucket_id}.Arn>/{config.transcripts_prefix}*",
                    f"Resource::<{bucket_id}.Arn>/{config.cards_prefix}*",
                ],
            )

    @property
    def endpoint_url(self) -> str:
        return f"{self.api.api_endpoint}{MCP_PATH}"
