"""Harvesters: one managed policy per tenant (`-c harvesterTenants=acme,globex`) that lets a laptop's
credentials upload that tenant's transcripts and nothing else. The tenant is the key prefix, so a credential
with PutObject on the whole bucket could write into any tenant's memory; attach this policy instead."""

from __future__ import annotations

import re

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from stacks.config import ContextError, StackConfig
from stacks.constructs.storage import Storage
from stacks.nag import acknowledge

HARVESTER_OUTPUT = "HarvesterPolicyArns"  # read by `episodic setup aws` (episodic.harvest.state)


def tenant_id_part(tenant: str) -> str:
    """The tenant's letters and digits, capitalised per part (construct ids of two tenants must differ)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", tenant)) or "Tenant"


class Harvesters(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, storage: Storage) -> None:
        super().__init__(scope, construct_id)
        self.policies: dict[str, iam.ManagedPolicy] = {}
        seen: dict[str, str] = {}
        for tenant in config.harvester_tenants:
            ident = tenant_id_part(tenant)
            if ident in seen:
                raise ContextError(
                    f"harvesterTenants {seen[ident]!r} and {tenant!r} make the same construct id"
                )
            seen[ident] = tenant
            self.policies[tenant] = self._policy(config, storage, tenant, ident)

    def _policy(self, config: StackConfig, storage: Storage, tenant: str, ident: str) -> iam.ManagedPolicy:
        bucket = storage.transcripts
        own = [
            bucket.arn_for_objects(f"{config.transcripts_prefix}{tenant}/*"),
        ]
        # `backfill --wait` reads its own cards and failure records; `harvest` heads what it uploaded
        readable = [
            *own,
            bucket.arn_for_objects(f"{config.cards_prefix}{tenant}/*"),
            bucket.arn_for_objects(f"{config.failures_prefix}{tenant}/*"),
        ]
        policy = iam.ManagedPolicy(
            self,
            ident,
            description=f"episodic harvest for tenant {tenant}: upload under {config.transcripts_prefix}{tenant}/",
            statements=[
                iam.PolicyStatement(sid="UploadOwnTranscripts", actions=["s3:PutObject"], resources=own),
                iam.PolicyStatement(sid="ReadOwnResults", actions=["s3:GetObject"], resources=readable),
                iam.PolicyStatement(
                    sid="EncryptThroughS3",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[storage.key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}},
                ),
            ],
        )
        bucket_id = Stack.of(self).get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
        acknowledge(
            policy,
            "AwsSolutions-IAM5",
            f"Objects of one tenant ({tenant}) under three prefixes of one bucket: the tenant's own prefix is "
            "the narrowest resource that names a session's transcript, card and failure record.",
            findings=[
                f"Resource::<{bucket_id}.Arn>/{prefix}{tenant}/*"
                for prefix in (config.transcripts_prefix, config.cards_prefix, config.failures_prefix)
            ],
        )
        return policy
