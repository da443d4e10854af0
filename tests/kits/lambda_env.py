"""A local AWS for the Lambda handlers: moto S3 (with real S3->SQS notifications), SQS (with redrive to a
DLQ), DynamoDB (idempotency) and Secrets Manager; Bedrock Converse through botocore's Stubber; S3 Vectors
through the in-process fake. Nothing leaves the machine (sockets are blocked for the whole session)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import ANY, Stubber
from moto import mock_aws

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `lambdas` lives at the repository root, beside `tests`
    sys.path.insert(0, str(REPO_ROOT))

from episodic.assembly import build_memory  # noqa: E402
from episodic.aws.clients import AwsClients  # noqa: E402
from episodic.aws.s3vectors_store import S3VectorsStore  # noqa: E402
from episodic.aws.search_mode import store_search_mode  # noqa: E402
from episodic.embed.hashing import HashingEmbedder  # noqa: E402
from episodic.kernel.auth import token_hash  # noqa: E402
from episodic.kernel.settings import load_deployed_settings  # noqa: E402
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index  # noqa: E402

from lambdas.authorizer import handler as authorizer_handler  # noqa: E402
from lambdas.distill import handler as distill_handler  # noqa: E402
from lambdas.mcp import handler as mcp_handler  # noqa: E402

REGION = "us-east-1"
BUCKET = "episodic-transcripts-test"
VECTOR_BUCKET = "episodic-vectors"
VECTOR_INDEX = "episodes-1024d"
TABLE = "episodic-idempotency"
SECRET = "episodic/tokens"
PREFIX = "transcripts/"
FIXTURE_PROJECT = REPO_ROOT / "tests" / "fixtures" / "transcripts" / "projects" / "-home-dev-my-app-v2-0"
FIXTURE_SESSION = "11111111-1111-4111-8111-111111111111"
TOOL_NAME = "emit_card"


@dataclass
class LambdaContext:
    """What Powertools reads from the real Lambda context."""

    function_name: str = "episodic-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:episodic-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def card(
    problem: str = "Phoenix dev server does not start after a dependency upgrade", **overrides: Any
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "problem": problem,
        "steps": ["Read the startup error", "Pinned the incompatible dependency", "Restarted the server"],
        "key_decisions": ["Pin the dependency instead of patching it, to keep the upgrade reversible"],
        "insight": "The upgrade changed a config default; pinning restored the old behaviour.",
        "dead_ends": ["Clearing the build cache did not help"],
        "misleading_intuitions": ["The port looked taken but was free"],
        "critical_checks": ["The server answered on its port after the pin"],
        "outcome": "verified",
        "tags": ["elixir", "phoenix"],
    }
    base.update(overrides)
    return base


def converse_reply(card_input: dict[str, Any] | None, tool_id: str = "tu-1") -> dict[str, Any]:
    content = [{"toolUse": {"toolUseId": tool_id, "name": TOOL_NAME, "input": card_input}}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 4000, "outputTokens": 500, "totalTokens": 4500},
        "metrics": {"latencyMs": 900},
    }


@dataclass
class LocalCloud:
    s3: Any
    sqs: Any
    dynamodb: Any
    secrets: Any
    bedrock: Any
    bedrock_stub: Stubber
    vectors: FakeS3VectorsClient
    queue_url: str
    dlq_url: str
    tokens: dict[str, str] = field(default_factory=dict)  # tenant -> token
    scopes: dict[str, str] = field(default_factory=dict)  # tenant -> scope

    def stub_converse(self, *replies: dict[str, Any]) -> None:
        for reply in replies:
            self.bedrock_stub.add_response(
                "converse",
                reply,
                expected_params={
                    "modelId": ANY,
                    "system": ANY,
                    "messages": ANY,
                    "inferenceConfig": ANY,
                    "toolConfig": ANY,
                },
            )

    def upload_session(
        self, tenant: str, session: str = FIXTURE_SESSION, project: Path = FIXTURE_PROJECT
    ) -> str:
        """The main file and its subagent files, in the bucket layout `harvest` writes."""
        for path in sorted((project / session).rglob("subagents/**/*.jsonl")):
            relative = path.relative_to(project).as_posix()
            self.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}{tenant}/{relative}", Body=path.read_bytes())
        key = f"{PREFIX}{tenant}/{session}.jsonl"
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=(project / f"{session}.jsonl").read_bytes())
        return key

    def receive(self, queue_url: str | None = None) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=queue_url or self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        )
        return list(response.get("Messages", []))

    def poll_once(self, handler: Callable[[dict[str, Any], Any], dict[str, Any]]) -> dict[str, Any] | None:
        """What the Lambda event source mapping does: receive, invoke, delete all but the failed ones."""
        messages = self.receive()
        if not messages:
            return None
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        event = {"Records": [sqs_record(m, arn) for m in messages]}
        result = handler(event, LambdaContext())
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return result

    def add_token(self, tenant: str, scope: str = "read") -> str:
        token = f"epi_test_{tenant}_{uuid.uuid4().hex}"
        self.tokens[tenant], self.scopes[tenant] = token, scope
        entries = [
            {"sha256": token_hash(t), "tenant": n, "scope": self.scopes[n]} for n, t in self.tokens.items()
        ]
        self.secrets.put_secret_value(SecretId=SECRET, SecretString=json.dumps({"tokens": entries}))
        return token


def sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    attributes = message.get("Attributes", {})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            "SentTimestamp": attributes.get("SentTimestamp", "0"),
            "SenderId": attributes.get("SenderId", "s3"),
            "ApproximateFirstReceiveTimestamp": attributes.get("ApproximateFirstReceiveTimestamp", "0"),
        },
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def http_event(
    method: str,
    body: Any = None,
    *,
    path: str = "/mcp",
    authorizer: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An HTTP API payload-2.0 event as API Gateway sends it after a simple-response authorizer."""
    raw = json.dumps(body) if body is not None and not isinstance(body, str) else body
    request_context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "api1",
        "domainName": "api1.execute-api.us-east-1.amazonaws.com",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "192.0.2.1",
            "userAgent": "t",
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": f"{method} {path}",
        "stage": "$default",
        "time": "30/Nov/2026:00:00:00 +0000",
        "timeEpoch": 1800000000000,
    }
    if authorizer is not None:
        request_context["authorizer"] = {"lambda": authorizer}
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": "Bearer irrelevant-after-the-authorizer",
            **(headers or {}),
        },
        "requestContext": request_context,
        "body": raw,
        "isBase64Encoded": False,
    }


def authorize(token: str | None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    event = {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": "arn:aws:execute-api:us-east-1:123456789012:api1/$default/POST/mcp",
        "identitySource": [headers.get("authorization", "")],
        "routeKey": "POST /mcp",
        "rawPath": "/mcp",
        "headers": headers,
        "requestContext": {"http": {"method": "POST", "path": "/mcp"}},
    }
    return authorizer_handler.handler(event, LambdaContext())


def call_tool(
    name: str, arguments: dict[str, Any], authorizer: dict[str, Any], request_id: int = 1
) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = {"mcp-protocol-version": "2025-11-25"}
    return mcp_handler.handler(
        http_event("POST", body, authorizer=authorizer, headers=headers), LambdaContext()
    )


@contextmanager
def local_cloud(tmp_home: Path) -> Iterator[LocalCloud]:
    """Every AWS piece the three handlers touch, wired like the stack; handler runtimes injected."""
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        secrets = boto3.client("secretsmanager", region_name=REGION)
        bedrock = boto3.client("bedrock-runtime", region_name=REGION)

        s3.create_bucket(Bucket=BUCKET)
        dlq_url = sqs.create_queue(QueueName="dead-letters")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})
        # visibility 0: a failed message is visible again at once (the real queue waits 6x the timeout)
        queue_url = sqs.create_queue(
            QueueName="ingest", Attributes={"VisibilityTimeout": "0", "RedrivePolicy": redrive}
        )["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        s3.put_bucket_notification_configuration(
            Bucket=BUCKET,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {
                        "QueueArn": queue_arn,
                        "Events": ["s3:ObjectCreated:*"],
                        "Filter": {
                            "Key": {
                                "FilterRules": [
                                    {"Name": "prefix", "Value": PREFIX},
                                    {"Name": "suffix", "Value": ".jsonl"},
                                ]
                            }
                        },
                    }
                ]
            },
        )
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        secrets.create_secret(Name=SECRET, SecretString=json.dumps({"tokens": []}))

        vectors = FakeS3VectorsClient(region=REGION)
        make_index(vectors, VECTOR_BUCKET, VECTOR_INDEX, dimension=1024)

        settings = load_deployed_settings(
            home=str(tmp_home),
            store="s3vectors",
            embedder="titan",
            distiller="bedrock",
            vector_bucket=VECTOR_BUCKET,
            vector_index=VECTOR_INDEX,
            transcripts_bucket=BUCKET,
            transcripts_prefix=PREFIX,
        )
        clients = AwsClients(s3=s3, s3vectors=vectors, bedrock_runtime=bedrock, secretsmanager=secrets)

        def memory() -> Any:
            # the hashing embedder stands in for Titan: deterministic, offline, same 1024-d parity path
            return build_memory(
                settings,
                clients=clients,
                embedder=HashingEmbedder(1024),
                store=S3VectorsStore(vectors, VECTOR_BUCKET, VECTOR_INDEX, sleep=lambda _s: None),
            )

        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

        distill_handler.set_runtime(
            distill_handler.DistillRuntime(
                settings=settings,
                memory=memory(),
                s3=s3,
                idempotency=DynamoDBPersistenceLayer(table_name=TABLE, boto3_client=dynamodb),
            )
        )
        mcp_memory = memory()
        mcp_memory.uploaded = mcp_handler.uploaded_sessions(settings, s3)  # as build_runtime wires it
        mode = store_search_mode(mcp_memory.store)  # as build_runtime reads it at init
        mcp_handler.set_runtime(
            mcp_handler.McpRuntime(settings=settings, memory=mcp_memory, search_mode=mode)
        )
        from episodic.aws.secrets_auth import SecretsManagerAuthenticator

        authorizer_handler.set_runtime(
            authorizer_handler.AuthorizerRuntime(
                SecretsManagerAuthenticator(secrets, SECRET, cache_seconds=0)
            )
        )
        stub = Stubber(bedrock)
        stub.activate()
        try:
            yield LocalCloud(s3, sqs, dynamodb, secrets, bedrock, stub, vectors, queue_url, dlq_url)
        finally:
            stub.deactivate()
            distill_handler.set_runtime(None)
            mcp_handler.set_runtime(None)
            authorizer_handler.set_runtime(None)
