"""Storage: one customer-managed key, the private transcripts bucket, the S3 Vectors bucket and index."""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3vectors as s3vectors
from constructs import Construct

from stacks.config import StackConfig
from stacks.nag import acknowledge
from stacks.names import StackNames

# the S3 Vectors store keeps the card JSON and its rendering text beside each vector, unfiltered
NON_FILTERABLE_KEYS = ["record", "text"]
# ... and BM25 full-text search on the keyword text (mirrors episodic.aws.s3vectors_metadata.TEXT_KEY)
TEXT_SEARCH_KEY = "text"
TEXT_SEARCH_LANGUAGE = "en"


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.names = StackNames.of(config)  # retained resources' names: new for every stack created

        self.key = kms.Key(
            self,
            "Key",
            description=f"{config.name_prefix}: transcripts, cards, vectors, queues, tokens, logs",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self._allow_service_principals()

        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # S3 server access logging can only deliver to SSE-S3 buckets (SSE-KMS is not supported)
            encryption=s3.BucketEncryption.S3_MANAGED,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the server-access-log bucket itself; logging it into itself would loop.",
        )

        self.transcripts = s3.Bucket(
            self,
            "Transcripts",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="transcripts/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(config.noncurrent_version_days),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                    expired_object_delete_marker=True,
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )

        self.vector_bucket = s3vectors.CfnVectorBucket(
            self,
            "VectorBucket",
            vector_bucket_name=self.names.vector_bucket,
            encryption_configuration=s3vectors.CfnVectorBucket.EncryptionConfigurationProperty(
                sse_type="aws:kms", kms_key_arn=self.key.key_arn
            ),
        )
        self.vector_bucket.apply_removal_policy(RemovalPolicy.RETAIN)
        self.index = s3vectors.CfnIndex(
            self,
            "Index",
            index_name=config.vector_index_name,
            vector_bucket_arn=self.vector_bucket.attr_vector_bucket_arn,
            data_type="float32",
            dimension=config.titan_dimension,
            distance_metric="cosine",
            metadata_configuration=s3vectors.CfnIndex.MetadataConfigurationProperty(
                non_filterable_metadata_keys=NON_FILTERABLE_KEYS
            ),
            encryption_configuration=s3vectors.CfnIndex.EncryptionConfigurationProperty(
                sse_type="aws:kms", kms_key_arn=self.key.key_arn
            ),
        )
        # CloudFormation documents MetadataConfiguration.TextSearchConfigurations (MetadataKey, Language);
        # the L1 in aws-cdk-lib 2.275.0 does not model it yet, so it is a raw override. Buckets created
        # after 2026-09-30 make ENHANCED indexes by default, which full-text (hybrid) search needs.
        self.index.add_property_override(
            "MetadataConfiguration.TextSearchConfigurations",
            [{"MetadataKey": TEXT_SEARCH_KEY, "Language": TEXT_SEARCH_LANGUAGE}],
        )
        acknowledge(
            self.index,
            "CloudFormation-Validate::F3002",
            "TextSearchConfigurations is documented for AWS::S3Vectors::Index (MetadataKey, Language) but "
            "the CDK's bundled resource schema predates it; the template test pins the override's shape.",
        )
        self.index.apply_removal_policy(RemovalPolicy.RETAIN)

    @property
    def vector_bucket_arn(self) -> str:
        return self.vector_bucket.attr_vector_bucket_arn

    @property
    def index_arn(self) -> str:
        return self.index.attr_index_arn

    def _allow_service_principals(self) -> None:
        """Key-policy grants for services that use the key on our behalf, each pinned to this account."""
        account, region, partition = Aws.ACCOUNT_ID, Aws.REGION, Aws.PARTITION
        # built from the name, not the resource attribute, so the key does not depend on the bucket
        vector_bucket_arn = f"arn:{partition}:s3vectors:{region}:{account}:bucket/{self.names.vector_bucket}"
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowS3VectorsAsyncIndexing",
                principals=[iam.ServicePrincipal("indexing.s3vectors.amazonaws.com")],
                actions=["kms:Decrypt"],
                resources=["*"],  # in a key policy "*" means this key
                conditions={
                    "StringEquals": {"aws:SourceAccount": account},
                    "ArnLike": {"aws:SourceArn": [vector_bucket_arn, f"{vector_bucket_arn}/*"]},
                },
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchLogs",
                principals=[iam.ServicePrincipal(f"logs.{region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt*",
                    "kms:Decrypt*",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:Describe*",
                ],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": f"arn:{partition}:logs:{region}:{account}:log-group:*"
                    }
                },
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToEncryptedTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": account}},
            )
        )
