"""MCP Lambda: an HTTP API (payload 2.0) event -> `McpEndpoint.handle` -> an HTTP API response.

The Lambda authorizer has already checked the bearer token; the tenant comes from its context
(`requestContext.authorizer.lambda`), never from the request body. The runtime is built at init (in Lambda),
so a provisioned instance answers its first request warm; its search mode (hybrid or vector-only) is logged
there and sent back in the `X-Episodic-Search-Mode` header (`episodic doctor --aws` reads it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext
from episodic.assembly import build_memory
from episodic.aws.clients import AwsClients
from episodic.aws.search_mode import SEARCH_MODE_HEADER, SEARCH_REASON_HEADER, SearchMode, store_search_mode
from episodic.aws.uploaded_sessions import S3UploadedSessions
from episodic.kernel.auth import SCOPES, Authenticator, Principal, validate_tenant
from episodic.kernel.errors import AuthError, EpisodicError
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings, load_deployed_settings
from episodic.mcp.protocol import HttpRequest, HttpResponse, McpEndpoint
from episodic.mcp.tools import default_registry, read_only_registry

logger = Logger()
tracer = Tracer()


def principal_from_authorizer(context: dict[str, Any] | None) -> Principal:
    """The principal the authorizer put in its simple-response context ({"tenant", "scopes"})."""
    if not context or not context.get("tenant"):
        raise AuthError("no authorizer context: this function must sit behind the HTTP API authorizer")
    try:
        tenant = validate_tenant(str(context["tenant"]))
    except EpisodicError as exc:
        raise AuthError(f"authorizer context has an invalid tenant: {exc}") from exc
    scopes = frozenset(str(context.get("scopes", "")).split()) & SCOPES["write"]
    return Principal(tenant_id=tenant, scopes=scopes or SCOPES["read"])


@dataclass
class AuthorizerContext(Authenticator):
    """The endpoint's authenticator inside Lambda: the authorizer already authenticated this request."""

    principal: Principal | None = None

    def authenticate(self, token: str | None) -> Principal:
        if self.principal is None:
            raise AuthError("request was not authorized by the HTTP API authorizer")
        return self.principal


@dataclass
class McpRuntime:
    settings: Settings
    memory: Memory
    auth: AuthorizerContext = field(default_factory=AuthorizerContext)
    search_mode: SearchMode | None = None
    endpoint: McpEndpoint = field(init=False)

    def __post_init__(self) -> None:
        registry = read_only_registry if self.settings.read_only else default_registry
        self.endpoint = McpEndpoint(
            registry(self.memory),
            authenticator=self.auth,
            allowed_origins=self.settings.allowed_origins,
        )


_runtime: McpRuntime | None = None


def uploaded_sessions(settings: Settings, s3: Any) -> S3UploadedSessions | None:
    """record_episode's evidence and archive: the tenant's uploaded transcript (none when read-only)."""
    if settings.read_only:
        return None
    return S3UploadedSessions(
        s3,
        str(settings.transcripts_bucket),
        transcripts_prefix=settings.transcripts_prefix,
        cards_prefix=settings.cards_prefix,
        kms_key_id=settings.kms_key_id,
    )


def build_runtime(settings: Settings | None = None, clients: AwsClients | None = None) -> McpRuntime:
    settings = settings or load_deployed_settings()  # a missing variable fails the cold start, by name
    clients = clients or AwsClients(settings)
    memory = build_memory(settings, clients=clients)
    memory.uploaded = uploaded_sessions(settings, clients.get("s3"))
    if memory.reranker is not None:  # at init, not inside the first search's deadline (-c reranker=local)
        memory.reranker.warm()
    mode = store_search_mode(memory.store, log=logger)
    return McpRuntime(settings=settings, memory=memory, search_mode=mode)


def runtime() -> McpRuntime:
    global _runtime
    if _runtime is None:
        _runtime = build_runtime()
    return _runtime


def set_runtime(value: McpRuntime | None) -> None:
    """Tests inject a memory over fakes here; None rebuilds from settings on the next event."""
    global _runtime
    _runtime = value


def to_request(event: APIGatewayProxyEventV2) -> HttpRequest:
    body = event.decoded_body or ""
    return HttpRequest(
        method=event.request_context.http.method,
        path=event.raw_path,
        headers=dict(event.headers or {}),
        body=body.encode("utf-8") if isinstance(body, str) else body,
    )


def to_result(response: HttpResponse, mode: SearchMode | None = None) -> dict[str, Any]:
    headers = dict(response.headers)
    if mode is not None:
        headers[SEARCH_MODE_HEADER] = mode.mode
        headers[SEARCH_REASON_HEADER] = mode.reason.encode("ascii", "replace").decode("ascii")
    return {
        "statusCode": response.status,
        "headers": headers,
        "body": response.body.decode("utf-8"),
        "isBase64Encoded": False,
    }


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    parsed = APIGatewayProxyEventV2(event)
    rt = runtime()
    try:
        rt.auth.principal = principal_from_authorizer(parsed.request_context.authorizer.get_lambda)
    except AuthError as exc:
        logger.warning("request without a usable authorizer context", extra={"reason": str(exc)})
        rt.auth.principal = None
    try:
        response = rt.endpoint.handle(to_request(parsed))
    finally:
        rt.auth.principal = None  # one request, one principal: nothing leaks into the next invocation
    logger.info("mcp request", extra={"status": response.status, "path": parsed.raw_path})
    return to_result(response, rt.search_mode)


if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):  # in Lambda: build at init, not on the first request
    _runtime = build_runtime()
