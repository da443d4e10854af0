"""The official `opensearch-py` client for an OpenSearch Serverless collection, SigV4-signed for `aoss`.

Made only when asked for (never at import time); credentials come from the standard boto3 chain (the
Lambda's role), refreshed by botocore. The timeout is the recall deadline's order, not OpenSearch's 10 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from episodic.kernel.errors import ConfigError

if TYPE_CHECKING:
    from episodic.kernel.settings import Settings

SERVICE = "aoss"
DEFAULT_TIMEOUT_SECONDS = 2.0


def collection_host(endpoint: str) -> str:
    """`https://abc123.us-east-1.aoss.amazonaws.com` (or the bare host) → the host name."""
    host = urlsplit(endpoint).hostname if "://" in endpoint else endpoint.split("/", 1)[0]
    if not host:
        raise ConfigError(f"EPISODIC_OPENSEARCH_ENDPOINT is not a collection endpoint: {endpoint!r}")
    return host


def opensearch_client(
    settings: Settings,
    *,
    credentials: Any = None,
    connection_class: Any = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Any:
    """An `OpenSearch` client for `settings.opensearch_endpoint`; `connection_class` is for request-shape tests."""
    if not settings.opensearch_endpoint:
        raise ConfigError("EPISODIC_OPENSEARCH_ENDPOINT is required with an OpenSearch store")
    try:
        from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection
    except ImportError as exc:
        raise ConfigError("the OpenSearch backend needs opensearch-py: pip install 'episodic[aws]'") from exc
    if credentials is None:
        from episodic.aws.clients import aws_session

        session = aws_session(settings)
        credentials = session.get_credentials()
        region = settings.aws_region or session.region_name
    else:
        region = settings.aws_region
    if not region:
        raise ConfigError(
            "EPISODIC_AWS_REGION (or AWS_REGION) is required to sign OpenSearch Serverless calls"
        )
    return OpenSearch(
        hosts=[{"host": collection_host(settings.opensearch_endpoint), "port": 443}],
        http_auth=Urllib3AWSV4SignerAuth(credentials, region, SERVICE),
        use_ssl=True,
        verify_certs=True,
        connection_class=connection_class or Urllib3HttpConnection,
        timeout=timeout,
        max_retries=0,  # the recall deadline decides; a retry would only run past it
        retry_on_timeout=False,
    )
