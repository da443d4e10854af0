"""EpisodicStack: storage, ingest, serving and monitoring, wired together; outputs for the user."""

from __future__ import annotations

import os
from typing import Any

from aws_cdk import CfnOutput, Stack, Token
from constructs import Construct

from stacks.config import StackConfig
from stacks.constructs.dreaming import Dreaming, grant_records_read
from stacks.constructs.harvesters import HARVESTER_OUTPUT, Harvesters
from stacks.constructs.history import History
from stacks.constructs.ingest import Ingest
from stacks.constructs.injections import InjectionRecords
from stacks.constructs.monitoring import Monitoring
from stacks.constructs.serving import Serving
from stacks.constructs.storage import Storage
from stacks.nag import acknowledge

# the singleton Lambda CDK adds for S3 event notifications (id fixed by aws-cdk-lib)
NOTIFICATIONS_HANDLER_ID = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"

# behaviour this stack relies on, whatever the CDK CLI's defaults are
FEATURE_FLAGS = {
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,  # log delivery by bucket policy, not ACLs
    "@aws-cdk/aws-s3:createDefaultLoggingPolicy": True,
}


class EpisodicStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackConfig | None = None, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        for flag, enabled in FEATURE_FLAGS.items():  # before any child reads them; works without cdk.json too
            if self.node.try_get_context(flag) is None:
                self.node.set_context(flag, enabled)
        self.config = config or StackConfig.from_context(self.node)
        # an env-agnostic stack deploys to the CLI's region, which the CLI passes as CDK_DEFAULT_REGION
        region = None if Token.is_unresolved(self.region) else self.region
        self.config.check_region(region or os.environ.get("CDK_DEFAULT_REGION"))

        self.storage = Storage(self, "Storage", config=self.config)
        self.ingest = Ingest(self, "Ingest", config=self.config, storage=self.storage)
        self.serving = Serving(self, "Serving", config=self.config, storage=self.storage)
        self.harvesters = Harvesters(self, "Harvesters", config=self.config, storage=self.storage)
        grant_records_read(self.serving.mcp.function, self.config, self.storage, self.serving.mcp.role)
        self.dreaming = (
            Dreaming(self, "Dreaming", config=self.config, storage=self.storage)
            if self.config.dreaming
            else None
        )
        self.history = History(  # the history tools' table and records (episodic.aws.dynamo_history)
            self,
            "History",
            storage=self.storage,
            writer=self.ingest.distill.function,
            reader=self.serving.mcp.function,
            reader_writes=not self.config.read_only,
        )
        self.injections = InjectionRecords(  # what memory gave each session (episodic.aws.dynamo_injections)
            self,
            "Injections",
            storage=self.storage,
            writer=self.ingest.distill.function,
            reader=self.serving.mcp.function,
            reader_writes=not self.config.read_only,
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=self.config,
            key=self.storage.key,
            dead_letters=self.ingest.dead_letters,
            functions={
                "Distill": self.ingest.distill.function,
                "Mcp": self.serving.mcp.function,
                "Authorizer": self.serving.authorizer_fn.function,
                **({"Dream": self.dreaming.dream.function} if self.dreaming else {}),
            },
        )

        self.scratch = None
        if self.config.scratch_memory == "opensearch":  # off by default: OCUs cost more than S3 Vectors
            from stacks.constructs.scratch_memory import ScratchMemoryCollection

            self.scratch = ScratchMemoryCollection(
                self,
                "ScratchMemory",
                config=self.config,
                indexer=self.ingest.distill.function,
                retriever=self.serving.mcp.function,
                alarm_topic=self.monitoring.topic,
            )

        outputs = {
            "EndpointUrl": (self.serving.endpoint_url, "MCP endpoint (episodic setup claude-code --url ...)"),
            "TranscriptsBucketName": (
                self.storage.transcripts.bucket_name,
                "harvest uploads transcripts here",
            ),
            "TranscriptsPrefix": (
                self.config.transcripts_prefix,
                "key layout: <prefix><tenant>/<session-id>.jsonl",
            ),
            "TokensSecretArn": (self.serving.tokens.secret_arn, "bearer-token hashes -> tenants"),
            "VectorBucketName": (self.storage.names.vector_bucket, "S3 Vectors bucket"),
            "VectorIndexName": (self.config.vector_index_name, "S3 Vectors index"),
            "DeadLetterQueueUrl": (self.ingest.dead_letters.queue_url, "transcripts that failed 3 times"),
            "AlarmTopicArn": (self.monitoring.topic.topic_arn, "subscribe to receive alarms"),
            "HistoryTableName": (self.history.table.table_name, "history tools: session metadata and links"),
        }
        if self.harvesters.policies:  # one JSON object, so `setup aws` reads any tenant name back
            outputs[HARVESTER_OUTPUT] = (
                self.to_json_string({t: p.managed_policy_arn for t, p in self.harvesters.policies.items()}),
                "tenant -> upload policy ARN: attach a tenant's policy to the identity that harvests for it",
            )
        if self.scratch is not None:
            outputs["ScratchCollectionEndpoint"] = (
                self.scratch.collection.attr_collection_endpoint,
                "OpenSearch Serverless collection of scratch memory",
            )
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)

        self._suppress_cdk_internals()

    def _suppress_cdk_internals(self) -> None:
        """CDK's own S3-notification custom resource: its code and role are not ours to shape."""
        handler = self.node.try_find_child(NOTIFICATIONS_HANDLER_ID)
        if handler is not None:
            acknowledge(
                handler,
                "AwsSolutions-IAM4",
                "CDK's BucketNotifications custom resource uses AWSLambdaBasicExecutionRole for its own logs.",
                findings=[
                    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
                ],
            )
