"""Template assertions for every security property of the stack (one synth, shared)."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template
from conftest import Synth

DATA_SERVICES = ("s3vectors", "bedrock", "dynamodb", "secretsmanager", "s3", "sqs")
OBJECT_SCOPES = {"/transcripts/*", "/cards/*", "/failures/*", "/dreams/*", "/history/*"}


def _template(s: Synth) -> Template:
    return Template.from_json(s.template)


def _statements(s: Synth) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, res in s.resources("AWS::IAM::Policy").items():
        for st in res["Properties"]["PolicyDocument"]["Statement"]:
            found.append((name, st))
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_buckets_are_private_tls_only_and_versioned(default_synth: Synth) -> None:
    t = _template(default_synth)
    block_all = {
        k: True for k in ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
    }
    for bucket in default_synth.resources("AWS::S3::Bucket").values():
        assert bucket["Properties"]["PublicAccessBlockConfiguration"] == block_all
    for policy in default_synth.resources("AWS::S3::BucketPolicy").values():
        denies = [st for st in policy["Properties"]["PolicyDocument"]["Statement"] if st["Effect"] == "Deny"]
        assert any(st.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}} for st in denies)
    assert len(default_synth.resources("AWS::S3::BucketPolicy")) == len(
        default_synth.resources("AWS::S3::Bucket")
    )
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": Match.any_value(),
                        },
                    }
                ]
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": Match.object_like({"LogFilePrefix": "transcripts/"}),
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {"NoncurrentVersionExpiration": {"NoncurrentDays": 30}, "Status": "Enabled"}
                        )
                    ]
                )
            },
        },
    )


def test_kms_everywhere(default_synth: Synth) -> None:
    for key in default_synth.resources("AWS::KMS::Key").values():
        assert key["Properties"]["EnableKeyRotation"] is True
    for queue in default_synth.resources("AWS::SQS::Queue").values():
        assert "KmsMasterKeyId" in queue["Properties"]
    for table in default_synth.resources("AWS::DynamoDB::Table").values():
        sse = table["Properties"]["SSESpecification"]
        assert sse["SSEEnabled"] is True and sse["SSEType"] == "KMS" and "KMSMasterKeyId" in sse
    for secret in default_synth.resources("AWS::SecretsManager::Secret").values():
        assert "KmsKeyId" in secret["Properties"]
    for log_group in default_synth.resources("AWS::Logs::LogGroup").values():
        assert "KmsKeyId" in log_group["Properties"]
    for topic in default_synth.resources("AWS::SNS::Topic").values():
        assert "KmsMasterKeyId" in topic["Properties"]
    for kind in ("AWS::S3Vectors::VectorBucket", "AWS::S3Vectors::Index"):
        for res in default_synth.resources(kind).values():
            assert res["Properties"]["EncryptionConfiguration"]["SseType"] == "aws:kms"
    # the one bucket without SSE-KMS is the access-log bucket: log delivery only supports SSE-S3
    sse_s3 = [
        name
        for name, b in default_synth.resources("AWS::S3::Bucket").items()
        if b["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ]["SSEAlgorithm"]
        == "AES256"
    ]
    assert len(sse_s3) == 1 and "AccessLogs" in sse_s3[0]


def test_key_policy_lets_s3_vectors_index_with_source_conditions(default_synth: Synth) -> None:
    statements = [
        st
        for key in default_synth.resources("AWS::KMS::Key").values()
        for st in key["Properties"]["KeyPolicy"]["Statement"]
        if st.get("Principal", {}).get("Service") == "indexing.s3vectors.amazonaws.com"
    ]
    assert len(statements) == 1
    st = statements[0]
    assert st["Action"] == "kms:Decrypt"
    assert "aws:SourceAccount" in st["Condition"]["StringEquals"]
    assert "aws:SourceArn" in st["Condition"]["ArnLike"]


def test_vector_index_shape(default_synth: Synth) -> None:
    _template(default_synth).has_resource_properties(
        "AWS::S3Vectors::Index",
        {
            "DataType": "float32",
            "Dimension": 1024,
            "DistanceMetric": "cosine",
            "IndexName": "episodes-1024d",
            "MetadataConfiguration": {"NonFilterableMetadataKeys": ["record", "text"]},
            "VectorBucketArn": Match.any_value(),
        },
    )


def test_the_index_is_full_text_searchable_on_the_key_the_store_searches(default_synth: Synth) -> None:
    from episodic.aws.s3vectors_metadata import NON_FILTERABLE_KEYS, TEXT_KEY

    (index,) = default_synth.resources("AWS::S3Vectors::Index").values()
    config = index["Properties"]["MetadataConfiguration"]
    assert config["TextSearchConfigurations"] == [{"MetadataKey": TEXT_KEY, "Language": "en"}]
    assert config["NonFilterableMetadataKeys"] == list(NON_FILTERABLE_KEYS)  # the stack mirrors the core


def test_every_route_is_behind_the_lambda_authorizer(default_synth: Synth) -> None:
    routes = default_synth.resources("AWS::ApiGatewayV2::Route")
    assert {r["Properties"]["RouteKey"] for r in routes.values()} == {
        "POST /mcp",
        "GET /mcp",
        "DELETE /mcp",
        "ANY /{proxy+}",
    }
    (authorizer_id,) = default_synth.resources("AWS::ApiGatewayV2::Authorizer")
    for route in routes.values():
        assert route["Properties"]["AuthorizationType"] == "CUSTOM"
        assert route["Properties"]["AuthorizerId"] == {"Ref": authorizer_id}
    _template(default_synth).has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {
            "AuthorizerType": "REQUEST",
            "AuthorizerPayloadFormatVersion": "2.0",
            "EnableSimpleResponses": True,
            "IdentitySource": ["$request.header.Authorization"],
            "AuthorizerResultTtlInSeconds": 60,
        },
    )


def test_no_function_url_and_no_snapstart_with_provisioned_concurrency(default_synth: Synth) -> None:
    t = _template(default_synth)
    t.resource_count_is("AWS::Lambda::Url", 0)
    for fn in default_synth.resources("AWS::Lambda::Function").values():
        assert "SnapStart" not in fn["Properties"]
    t.has_resource_properties(
        "AWS::Lambda::Alias",
        {"Name": "live", "ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": 1}},
    )
    (alias_id,) = default_synth.resources("AWS::Lambda::Alias")
    (integration,) = default_synth.resources("AWS::ApiGatewayV2::Integration").values()
    assert integration["Properties"]["IntegrationUri"] == {"Ref": alias_id}
    assert integration["Properties"]["TimeoutInMillis"] == 29000


def test_functions_are_python_313_arm64_with_settings_env(default_synth: Synth) -> None:
    functions = {
        fn["Properties"]["Handler"]: fn["Properties"]
        for fn in default_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"].startswith("lambdas.")
    }
    assert set(functions) == {
        "lambdas.distill.handler.handler",
        "lambdas.mcp.handler.handler",
        "lambdas.authorizer.handler.handler",
    }
    for props in functions.values():
        assert props["Runtime"] == "python3.13" and props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Environment"]["Variables"]["EPISODIC_HOME"] == "/tmp/episodic"
    distill = functions["lambdas.distill.handler.handler"]["Environment"]["Variables"]
    assert {k: distill[k] for k in ("EPISODIC_STORE", "EPISODIC_EMBEDDER", "EPISODIC_DISTILLER")} == {
        "EPISODIC_STORE": "s3vectors",
        "EPISODIC_EMBEDDER": "titan",
        "EPISODIC_DISTILLER": "bedrock",
    }
    for name in (
        "EPISODIC_VECTOR_BUCKET",
        "EPISODIC_VECTOR_INDEX",
        "EPISODIC_TRANSCRIPTS_BUCKET",
        "EPISODIC_BEDROCK_MODEL_ID",
        "EPISODIC_TITAN_MODEL_ID",
        "EPISODIC_TITAN_DIMENSION",
        "EPISODIC_IDEMPOTENCY_TABLE",
    ):
        assert name in distill
    assert (
        "EPISODIC_AUTH_SECRET_ID"
        in functions["lambdas.authorizer.handler.handler"]["Environment"]["Variables"]
    )


def test_ingest_queue_dlq_concurrency_and_idempotency(default_synth: Synth) -> None:
    t = _template(default_synth)
    queues = default_synth.resources("AWS::SQS::Queue")
    main = next(q for q in queues.values() if "RedrivePolicy" in q["Properties"])
    assert main["Properties"]["RedrivePolicy"]["maxReceiveCount"] == 3
    distill = next(
        f
        for f in default_synth.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "lambdas.distill.handler.handler"
    )
    assert main["Properties"]["VisibilityTimeout"] >= 6 * distill["Properties"]["Timeout"]
    t.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {"FunctionResponseTypes": ["ReportBatchItemFailures"], "ScalingConfig": {"MaximumConcurrency": 2}},
    )
    t.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )
    notifications = next(iter(default_synth.resources("Custom::S3BucketNotifications").values()))
    (config,) = notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    rules = {r["Name"]: r["Value"] for r in config["Filter"]["Key"]["FilterRules"]}
    assert rules == {"prefix": "transcripts/", "suffix": ".jsonl"} and config["Events"] == [
        "s3:ObjectCreated:*"
    ]


def test_least_privilege_no_wildcard_actions_and_scoped_data_access(default_synth: Synth) -> None:
    for name, st in _statements(default_synth):
        actions = _as_list(st["Action"])
        assert "*" not in actions and not any(a.endswith(":*") for a in actions), (name, actions)
        if _as_list(st["Resource"]) == ["*"]:
            # only services without resource-level permissions may use "*"
            assert set(actions) <= {
                "xray:PutTraceSegments",
                "xray:PutTelemetryRecords",
                "s3:PutBucketNotification",
            }, (name, st)
        if any(a.split(":")[0] in DATA_SERVICES for a in actions):
            for resource in _as_list(st["Resource"]):
                assert resource != "*" and not str(resource).endswith(":*"), (name, st)
                if (
                    isinstance(resource, dict) and "Fn::Join" in resource
                ):  # object ARNs: one known prefix each
                    tail = resource["Fn::Join"][1][-1]
                    assert not tail.endswith("*") or tail in OBJECT_SCOPES, (name, st)
    vector_statements = [
        st
        for _, st in _statements(default_synth)
        if any(a.startswith("s3vectors:") for a in _as_list(st["Action"]))
    ]
    actions = {frozenset(_as_list(st["Action"])) for st in vector_statements}
    assert actions == {
        frozenset(
            {
                "s3vectors:PutVectors",
                "s3vectors:GetVectors",
                "s3vectors:DeleteVectors",
                "s3vectors:ListVectors",
                "s3vectors:QueryVectors",
                "s3vectors:GetIndex",
            }
        ),
        frozenset(
            {"s3vectors:QueryVectors", "s3vectors:GetVectors", "s3vectors:ListVectors", "s3vectors:GetIndex"}
        ),
        frozenset({"s3vectors:PutVectors"}),  # the MCP function's review_episode / record_episode
    }
    for st in vector_statements:
        assert (
            st["Resource"] == {"Fn::GetAtt": [Match.any_value(), "IndexArn"]}
            or st["Resource"]["Fn::GetAtt"][1] == "IndexArn"
        )
    bedrock = [st for _, st in _statements(default_synth) if "bedrock:InvokeModel" in _as_list(st["Action"])]
    rendered = json.dumps(bedrock)
    assert "inference-profile/us.anthropic.claude-sonnet-4-6" in rendered
    assert "foundation-model/anthropic.claude-sonnet-4-6" in rendered
    assert "foundation-model/amazon.titan-embed-text-v2:0" in rendered
    model_wide = [st for st in bedrock if "bedrock:*::" in json.dumps(st["Resource"])]
    assert model_wide and all(
        "bedrock:InferenceProfileArn" in st["Condition"]["StringEquals"] for st in model_wide
    )


def test_alarms_and_outputs(default_synth: Synth) -> None:
    alarms = default_synth.resources("AWS::CloudWatch::Alarm").values()
    metrics = sorted(a["Properties"]["MetricName"] for a in alarms)
    assert metrics == ["ApproximateNumberOfMessagesVisible", *["Errors"] * 3, *["Throttles"] * 3]
    for alarm in alarms:
        assert alarm["Properties"]["Threshold"] == 0
        assert alarm["Properties"]["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["Properties"]["AlarmActions"]
    outputs = set(default_synth.template["Outputs"])
    assert {
        "EndpointUrl",
        "TranscriptsBucketName",
        "TokensSecretArn",
        "VectorBucketName",
        "VectorIndexName",
    } <= outputs
