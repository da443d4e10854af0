"""The stack's settings, read once from CDK context (cdk.json or `-c key=value`) and checked before synth."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs import Node

REPO_ROOT = Path(__file__).resolve().parents[1]
# mirror episodic.kernel.models (the stack stays core-free; a test checks they agree)
CARD_RENDERINGS = ("struct", "semantic", "reflect")
RENDERINGS = (*CARD_RENDERINGS, "opening")
# the deployed distiller is an LLM, whose cards get no `opening` vector: index the card renderings by default
TITAN_DIMENSIONS = (256, 512, 1024)
# cross-region inference profiles start with a geography; the rest of the id is the foundation model
PROFILE_GEOGRAPHIES = ("us", "eu", "apac", "jp", "au", "ca", "us-gov", "global")
LOG_RETENTION_DAYS = (1, 3, 7, 14, 30, 60, 90, 180, 365)
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # mirrors episodic.kernel.models.check_tenant
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9-]{1,24}$")
_SCHEDULE_RE = re.compile(r"^(?:cron|rate)\([^()]+\)$")
# a Bedrock model id is `<provider>.<model>` (anthropic.claude-sonnet-4-6, amazon.titan-embed-text-v2:0)
_MODEL_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-zA-Z0-9][a-zA-Z0-9._:-]*$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# which regions an inference profile's geography routes from (`global` from any commercial region)
_GEOGRAPHY_REGIONS: dict[str, Callable[[str], bool]] = {
    "us": lambda r: r.startswith("us-") and not r.startswith("us-gov-"),
    "us-gov": lambda r: r.startswith("us-gov-"),
    "eu": lambda r: r.startswith("eu-"),
    "apac": lambda r: r.startswith("ap-"),
    "jp": lambda r: r in ("ap-northeast-1", "ap-northeast-3"),
    "au": lambda r: r in ("ap-southeast-2", "ap-southeast-4"),
    "ca": lambda r: r.startswith("ca-"),
    "global": lambda r: not r.startswith(("us-gov-", "cn-")),
}
# mirror episodic.aws.bedrock_reranker.RERANK_MODEL_REGIONS (a test checks they agree): rerank-supported.html
RERANK_MODEL_REGIONS: dict[str, tuple[str, ...]] = {
    "amazon.rerank-v1:0": ("ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"),
    "cohere.rerank-v3-5:0": ("ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"),
}
RERANKERS = ("none", "bedrock", "local")
# the geography to suggest for a region's prefix
_REGION_GEOGRAPHY = (("us-gov-", "us-gov"), ("us-", "us"), ("eu-", "eu"), ("ap-", "apac"), ("ca-", "ca"))


class ContextError(ValueError):
    """A context value the stack cannot be built with (raised at synth, before anything is deployed)."""


@dataclass(frozen=True)
class StackConfig:
    name_prefix: str = "episodic"
    bedrock_model_id: str = "us.anthropic.claude-sonnet-4-6"
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimension: int = 1024
    renderings: tuple[str, ...] = CARD_RENDERINGS
    query_rendering: str = "all"
    provisioned_concurrency: int = 1
    distill_max_concurrency: int = 2
    distill_batch_size: int = 2
    distill_timeout_seconds: int = 600
    transcripts_prefix: str = "transcripts/"
    cards_prefix: str = "cards/"
    failures_prefix: str = "failures/"
    noncurrent_version_days: int = 30
    log_retention_days: int = 30
    bundle: bool = True
    # the weekly dream (episodic.dream): off by default; `-c dreaming=true` adds the schedule and its Lambda
    dreaming: bool = False
    dream_schedule: str = "cron(0 6 ? * MON *)"  # EventBridge Scheduler, UTC: Mondays 06:00
    dreams_prefix: str = "dreams/"
    scratch_memory: str = "off"  # "opensearch": scratch memory on an OpenSearch Serverless collection
    card_store: str = "s3vectors"  # "opensearch": the Lambdas' cards on that collection too
    alarm_email: str | None = None  # subscribed to the alarm topic (confirm the e-mail AWS sends)
    read_only: bool = False  # serve the read tools only; the MCP role gets no write permission
    harvester_tenants: tuple[str, ...] = ()  # one upload policy per tenant, scoped to its prefix
    # the second stage of search: off by default; `-c reranker=bedrock` (episodic.aws.bedrock_reranker) or
    # `-c reranker=local` (the cross-encoder judge, episodic.judge, carried in the MCP function's asset)
    reranker: str = "none"
    rerank_model_id: str = "amazon.rerank-v1:0"

    def __post_init__(self) -> None:
        if not _PREFIX_RE.match(self.name_prefix):
            raise ContextError(f"namePrefix {self.name_prefix!r}: use 2-25 lowercase letters, digits or '-'")
        unknown = [r for r in self.renderings if r not in RENDERINGS]
        if unknown or not self.renderings:
            raise ContextError(
                f"renderings must be a non-empty subset of {list(RENDERINGS)}, got {list(self.renderings)}"
            )
        if self.query_rendering != "all" and self.query_rendering not in self.renderings:
            raise ContextError(
                f"queryRendering {self.query_rendering!r} is not indexed: renderings are {list(self.renderings)}. "
                "Add it to `renderings` or query with an indexed one."
            )
        if self.titan_dimension not in TITAN_DIMENSIONS:
            raise ContextError(
                f"titanDimension must be one of {TITAN_DIMENSIONS}, got {self.titan_dimension}"
            )
        if self.provisioned_concurrency < 0:
            raise ContextError("provisionedConcurrency must be 0 (off) or more")
        if not 2 <= self.distill_max_concurrency <= 1000:  # the SQS event source's documented range
            raise ContextError("distillMaxConcurrency must be between 2 and 1000")
        if not 1 <= self.distill_batch_size <= 10:
            raise ContextError("distillBatchSize must be between 1 and 10")
        if not 60 <= self.distill_timeout_seconds <= 900:
            raise ContextError("distillTimeoutSeconds must be between 60 and 900")
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            raise ContextError(
                f"logRetentionDays must be one of {LOG_RETENTION_DAYS}, got {self.log_retention_days}"
            )
        if not self.dreams_prefix.endswith("/") or self.dreams_prefix.startswith("/"):
            raise ContextError(f"dreams_prefix must look like 'name/', got {self.dreams_prefix!r}")
        if not _SCHEDULE_RE.match(self.dream_schedule):
            raise ContextError(f"dreamSchedule must be cron(...) or rate(...), got {self.dream_schedule!r}")
        if self.scratch_memory not in ("off", "opensearch"):
            raise ContextError(f"scratchMemory must be 'off' or 'opensearch', got {self.scratch_memory!r}")
        if self.card_store not in ("s3vectors", "opensearch"):
            raise ContextError(f"cardStore must be 's3vectors' or 'opensearch', got {self.card_store!r}")
        if self.card_store == "opensearch" and self.scratch_memory != "opensearch":
            raise ContextError("cardStore=opensearch needs the collection: add -c scratchMemory=opensearch")
        for key, model in (("bedrockModelId", self.bedrock_model_id), ("titanModelId", self.titan_model_id)):
            self._check_model_id(key, model)
        if self.reranker not in RERANKERS:
            raise ContextError(
                f"reranker must be one of {', '.join(map(repr, RERANKERS))}, got {self.reranker!r}"
            )
        if self.rerank_model_id not in RERANK_MODEL_REGIONS:
            raise ContextError(
                f"rerankModelId {self.rerank_model_id!r} is not a Bedrock reranker: use one of "
                f"{sorted(RERANK_MODEL_REGIONS)}"
            )
        if self.alarm_email is not None and not _EMAIL_RE.match(self.alarm_email):
            raise ContextError(f"alarmEmail {self.alarm_email!r} is not an e-mail address")
        for tenant in self.harvester_tenants:
            if not _TENANT_RE.match(tenant):
                raise ContextError(
                    f"harvesterTenants: {tenant!r} is not a tenant name (letters, digits, '.', '_', '-')"
                )
        for name in ("transcripts_prefix", "cards_prefix", "failures_prefix"):
            value = getattr(self, name)
            if not value.endswith("/") or value.startswith("/"):
                raise ContextError(f"{name} must look like 'name/', got {value!r}")

    @staticmethod
    def _check_model_id(key: str, model_id: str) -> None:
        head, _, rest = model_id.partition(".")
        foundation = rest if head in PROFILE_GEOGRAPHIES and rest else model_id
        if not _MODEL_RE.match(foundation):
            raise ContextError(
                f"{key} {model_id!r} is not a Bedrock model id (`<provider>.<model>`, or an inference profile "
                f"`<geography>.<provider>.<model>`): e.g. -c {key}="
                + (
                    "us.anthropic.claude-sonnet-4-6"
                    if key == "bedrockModelId"
                    else "amazon.titan-embed-text-v2:0"
                )
            )

    def check_region(self, region: str | None) -> None:
        """The inference profile's geography must route from the deployment region, and the reranker (when on)
        must be served there (both checked when the region is known)."""
        if region and self.reranker == "bedrock":
            self._check_rerank_region(region)
        if not region or not self.uses_inference_profile:
            return
        geography = self.bedrock_model_id.partition(".")[0]
        if _GEOGRAPHY_REGIONS.get(geography, lambda _r: True)(region):
            return
        suggested = next((g for prefix, g in _REGION_GEOGRAPHY if region.startswith(prefix)), "global")
        raise ContextError(
            f"bedrockModelId {self.bedrock_model_id!r} is a {geography!r} inference profile, which does not "
            f"route from {region}: deploy with -c bedrockModelId={suggested}.{self.foundation_model_id} "
            "(check that the model is offered there: `aws bedrock list-inference-profiles`)"
        )

    def _check_rerank_region(self, region: str) -> None:
        regions = RERANK_MODEL_REGIONS[self.rerank_model_id]
        if region in regions:
            return
        others = [m for m, where in RERANK_MODEL_REGIONS.items() if region in where]
        fix = (
            f"deploy with -c rerankModelId={others[0]}"
            if others
            else f"deploy to one of {', '.join(regions)}"
        )
        raise ContextError(
            f"rerankModelId {self.rerank_model_id} reranks only in {', '.join(regions)}, not {region}: {fix}"
        )

    @property
    def foundation_model_id(self) -> str:
        """`us.anthropic.claude-sonnet-4-6` -> `anthropic.claude-sonnet-4-6` (the id without its geography)."""
        head, _, rest = self.bedrock_model_id.partition(".")
        return rest if head in PROFILE_GEOGRAPHIES and rest else self.bedrock_model_id

    @property
    def uses_inference_profile(self) -> bool:
        return self.foundation_model_id != self.bedrock_model_id

    @property
    def vector_index_name(self) -> str:
        # the dimension is in the name: a new dimension is a new index (CloudFormation replaces it)
        return f"episodes-{self.titan_dimension}d"

    @property
    def scratch_collection_name(self) -> str:
        return f"{self.name_prefix}-scratch"[:32]

    @classmethod
    def from_context(cls, node: Node) -> StackConfig:
        def get(key: str) -> Any:
            return node.try_get_context(key)

        values: dict[str, Any] = {}
        for key, field, kind in _CONTEXT_KEYS:
            raw = get(key)
            if raw is None:
                continue
            values[field] = _coerce(key, raw, kind)
        return cls(**values)


_CONTEXT_KEYS: tuple[tuple[str, str, str], ...] = (
    ("namePrefix", "name_prefix", "str"),
    ("bedrockModelId", "bedrock_model_id", "str"),
    ("titanModelId", "titan_model_id", "str"),
    ("titanDimension", "titan_dimension", "int"),
    ("renderings", "renderings", "list"),
    ("queryRendering", "query_rendering", "str"),
    ("provisionedConcurrency", "provisioned_concurrency", "int"),
    ("distillMaxConcurrency", "distill_max_concurrency", "int"),
    ("distillBatchSize", "distill_batch_size", "int"),
    ("distillTimeoutSeconds", "distill_timeout_seconds", "int"),
    ("transcriptsPrefix", "transcripts_prefix", "str"),
    ("cardsPrefix", "cards_prefix", "str"),
    ("failuresPrefix", "failures_prefix", "str"),
    ("noncurrentVersionDays", "noncurrent_version_days", "int"),
    ("logRetentionDays", "log_retention_days", "int"),
    ("bundle", "bundle", "bool"),
    ("dreaming", "dreaming", "bool"),
    ("dreamSchedule", "dream_schedule", "str"),
    ("dreamsPrefix", "dreams_prefix", "str"),
    ("scratchMemory", "scratch_memory", "str"),
    ("cardStore", "card_store", "str"),
    ("alarmEmail", "alarm_email", "str"),
    ("readOnly", "read_only", "bool"),
    ("harvesterTenants", "harvester_tenants", "list"),
    ("reranker", "reranker", "str"),
    ("rerankModelId", "rerank_model_id", "str"),
)


def _coerce(key: str, raw: Any, kind: str) -> Any:
    """`-c key=value` arrives as a string; cdk.json values arrive typed."""
    try:
        if kind == "int":
            if isinstance(raw, bool):
                raise ValueError("a boolean")
            return int(raw)
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text not in ("true", "false", "1", "0"):
                raise ValueError(f"{raw!r}")
            return text in ("true", "1")
        if kind == "list":
            if isinstance(raw, str):
                text = raw.strip()
                parsed = (
                    json.loads(text)
                    if text.startswith("[")
                    else [p.strip() for p in text.split(",") if p.strip()]
                )
            else:
                parsed = list(raw)
            return tuple(str(p) for p in parsed)
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ContextError(f"context {key}: cannot read {raw!r} as {kind} ({exc})") from exc


def core_environment(
    config: StackConfig, *, vector_bucket: str, vector_index: str, transcripts_bucket: str
) -> dict[str, str]:
    """The EPISODIC_* variables `episodic.kernel.settings.Settings` reads in every Lambda."""
    return {
        "EPISODIC_STORE": "s3vectors",
        "EPISODIC_EMBEDDER": "titan",
        "EPISODIC_DISTILLER": "bedrock",
        "EPISODIC_VECTOR_BUCKET": vector_bucket,
        "EPISODIC_VECTOR_INDEX": vector_index,
        "EPISODIC_TRANSCRIPTS_BUCKET": transcripts_bucket,
        "EPISODIC_TRANSCRIPTS_PREFIX": config.transcripts_prefix,
        "EPISODIC_BEDROCK_MODEL_ID": config.bedrock_model_id,
        "EPISODIC_TITAN_MODEL_ID": config.titan_model_id,
        "EPISODIC_TITAN_DIMENSION": str(config.titan_dimension),
        "EPISODIC_RENDERINGS": ",".join(config.renderings),
        "EPISODIC_QUERY_RENDERING": config.query_rendering,
    }
