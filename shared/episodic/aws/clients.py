"""boto3 sessions and clients from the settings (the standard credential chain), made only when asked for.

Stdlib-only at import time, so the authorizer Lambda's cold start stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from episodic.kernel.errors import ConfigError

if TYPE_CHECKING:
    from episodic.kernel.settings import Settings


def aws_session(settings: Settings, profile: str | None = None) -> Any:
    """A boto3 session for the configured region (a named profile when given)."""
    try:
        import boto3
    except ImportError as exc:  # the AWS backends are an optional extra
        raise ConfigError("the AWS backends need boto3: pip install 'episodic[aws]'") from exc
    name = profile or settings.aws_profile
    try:
        return boto3.Session(profile_name=name, region_name=settings.aws_region)
    except Exception as exc:  # ProfileNotFound and friends: one clear line
        raise ConfigError(f"cannot open AWS profile {name!r}: {exc}") from exc


# One retry budget: botocore makes a single attempt per call, and the adapters' own backoff (`_calls`,
# five attempts on throttling) is the only retry loop, so the two never multiply (botocore's default would
# retry each of those five attempts again). Bedrock calls are bounded: a Converse answer of ~2K output tokens
# takes well under a minute; 120 s cuts a stuck connection long before the distill Lambda's timeout.
CLIENT_CONFIG: dict[str, dict[str, Any]] = {
    "bedrock-runtime": {
        "connect_timeout": 5,
        "read_timeout": 120,
        "retries": {"mode": "standard", "total_max_attempts": 1},
    },
    # the reranker runs inside a search (the hook's 1.5 s budget; search_traces stops waiting at
    # rerank_seconds anyway): one short attempt, then the first stage's order
    "bedrock-agent-runtime": {
        "connect_timeout": 1,
        "read_timeout": 1,
        "retries": {"mode": "standard", "total_max_attempts": 1},
    },
}


def client_config(service: str) -> Any:
    """The botocore Config for `service` (None: botocore's defaults)."""
    options = CLIENT_CONFIG.get(service)
    if options is None:
        return None
    from botocore.config import Config

    return Config(**options)


def aws_client(settings: Settings, service: str, profile: str | None = None) -> Any:
    return aws_session(settings, profile).client(service, config=client_config(service))


@dataclass
class AwsClients:
    """The boto3 clients the AWS adapters use: given (tests pass moto/stubbed ones) or created from the
    settings on first use, never at import time."""

    settings: Settings | None = None
    s3: Any = None
    s3vectors: Any = None
    bedrock_runtime: Any = None
    secretsmanager: Any = None
    dynamodb: Any = None  # the history store's table (episodic.aws.dynamo_history)
    bedrock_agent_runtime: Any = None  # Rerank (episodic.aws.bedrock_reranker)

    def get(self, service: str) -> Any:
        attribute = service.replace("-", "_")
        client = getattr(self, attribute)
        if client is None:
            if self.settings is None:
                raise ConfigError(f"no {service} client was given and no settings to create one from")
            client = aws_client(self.settings, service)
            setattr(self, attribute, client)
        return client
