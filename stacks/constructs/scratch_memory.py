"""Scratch memory on OpenSearch Serverless (`-c scratchMemory=opensearch`, off by default): a VECTORSEARCH
collection, its encryption and network policies, data-access policies split by role (the indexer writes
and creates indexes, the retriever only reads and describes), a daily sweep, and an alarm on degraded recall.

Network: public endpoint, IAM only. Every request must be SigV4-signed by a principal named in a data-access
policy (the two Lambda roles); nothing is anonymous. What is exposed is the endpoint's existence (its DNS
name) and the ability to attempt signed requests; the alternative (a VPC endpoint) would put both Lambdas
in a VPC with interface endpoints for Bedrock, S3, SQS, DynamoDB, Secrets Manager and KMS, which costs more
than the collection for a small team. Dashboards are not opened at all.
Encryption: an AWS-owned key (no key-policy grants for the service to get wrong); the data stays in AWS.
"""

from __future__ import annotations

import json

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.config import StackConfig

INDEXER_PERMISSIONS = (
    "aoss:CreateIndex",
    "aoss:DescribeIndex",
    "aoss:UpdateIndex",
    "aoss:ReadDocument",
    "aoss:WriteDocument",
)
RETRIEVER_PERMISSIONS = ("aoss:DescribeIndex", "aoss:ReadDocument")
DEGRADED_METRIC = "ScratchRecallDegraded"  # episodic.scratch.recall's embedded metric
SWEEP_EVENT = {"episodic": "scratch-sweep"}
CARDS_INDEX = "episodic-cards"


class ScratchMemoryCollection(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        indexer: lambda_.Function,
        retriever: lambda_.Function,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        name = config.scratch_collection_name
        collection_rule = {"ResourceType": "collection", "Resource": [f"collection/{name}"]}
        index_resource = [f"index/{name}/*"]

        self.encryption = aoss.CfnSecurityPolicy(
            self,
            "Encryption",
            name=f"{name}-enc",
            type="encryption",
            description="scratch memory: encrypted with an AWS-owned key",
            policy=json.dumps({"Rules": [collection_rule], "AWSOwnedKey": True}),
        )
        self.network = aoss.CfnSecurityPolicy(
            self,
            "Network",
            name=f"{name}-net",
            type="network",
            description="scratch memory: SigV4/IAM only (see the construct's docstring); no dashboards",
            policy=json.dumps([{"Rules": [collection_rule], "AllowFromPublic": True}]),
        )
        indexer_role = indexer.role
        retriever_role = retriever.role
        assert indexer_role is not None and retriever_role is not None
        self.indexer_access = aoss.CfnAccessPolicy(
            self,
            "IndexerAccess",
            name=f"{name}-indexer",
            type="data",
            description="the distill Lambda: create the indexes, write and read documents",
            policy=json.dumps(
                [
                    {
                        "Rules": [
                            {
                                "ResourceType": "index",
                                "Resource": index_resource,
                                "Permission": list(INDEXER_PERMISSIONS),
                            },
                            {**collection_rule, "Permission": ["aoss:DescribeCollectionItems"]},
                        ],
                        "Principal": [indexer_role.role_arn],
                    }
                ]
            ),
        )
        self.retriever_access = aoss.CfnAccessPolicy(
            self,
            "RetrieverAccess",
            name=f"{name}-retriever",
            type="data",
            description="the MCP Lambda: read and describe only (cannot write or delete the index)",
            policy=json.dumps(
                [
                    {
                        "Rules": [
                            {
                                "ResourceType": "index",
                                "Resource": index_resource,
                                "Permission": list(RETRIEVER_PERMISSIONS),
                            },
                            {**collection_rule, "Permission": ["aoss:DescribeCollectionItems"]},
                        ],
                        "Principal": [retriever_role.role_arn],
                    }
                ]
            ),
        )
        self.collection = aoss.CfnCollection(
            self,
            "Collection",
            name=name,
            type="VECTORSEARCH",
            standby_replicas="DISABLED",  # halves the OCU minimum; scratch memory is a hint, days long
            description="episodic scratch memory of tool outcomes (3-14 days)",
        )
        self.collection.add_dependency(self.encryption)
        self.collection.add_dependency(self.network)

        api_access = iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[self.collection.attr_arn])
        for fn in (indexer, retriever):
            fn.add_to_role_policy(api_access)
            fn.add_environment("EPISODIC_SCRATCH_STORE", "opensearch")
            fn.add_environment("EPISODIC_OPENSEARCH_ENDPOINT", self.collection.attr_collection_endpoint)
            fn.add_environment("EPISODIC_AWS_REGION", Aws.REGION)
            if config.card_store == "opensearch":  # cards from the collection instead of S3 Vectors
                fn.add_environment("EPISODIC_STORE", "opensearch")
                fn.add_environment("EPISODIC_OPENSEARCH_CARDS_INDEX", CARDS_INDEX)
            fn.node.add_dependency(self.collection)

        # the sweep: daily, by the indexer (the only role that may delete)
        self.sweep_rule = events.Rule(
            self,
            "DailySweep",
            description="delete scratch records older than the TTL",
            schedule=events.Schedule.rate(Duration.days(1)),
            targets=[targets.LambdaFunction(indexer, event=events.RuleTargetInput.from_object(SWEEP_EVENT))],
        )
        self.degraded_alarm = cloudwatch.Alarm(
            self,
            "RecallDegraded",
            metric=cloudwatch.Metric(
                namespace="Episodic", metric_name=DEGRADED_METRIC, period=Duration.minutes(5), statistic="Sum"
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="scratch-memory recall returned nothing because OpenSearch errored or timed out",
        )
        self.degraded_alarm.add_alarm_action(actions.SnsAction(alarm_topic))
