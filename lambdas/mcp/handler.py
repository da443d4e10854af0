"""MCP Lambda: an HTTP API (payload 2.0) event -> `McpEndpoint.handle` -> an HTTP API response.

The Lambda authorizer has already checked the bearer token; the tenant comes from its context
(`requestContext.authorizer.lambda`), never from the request body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext
from episodic.auth import SCOPES, Authenticator, Principal, validate_tenant
from episodic.aws.clients import AwsClients
from episodic.backends import build_memory
from episodic.errors import AuthError, EpisodicError
from episodic.mcp.protocol import HttpRequest, HttpResponse, McpEndpoint
from episodic.mcp.tools import default_registry
from episodic.service import Memory
from episodic.settings import Settings, load_deployed_settings

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
    endpoint: McpEndpoint = field(init=False)

    def __post_init__(self) -> None:
        self.endpoint = McpEndpoint(
            default_registry(self.memory),
            authenticator=self.auth,
            allowed_origins=self.settings.allowed_origins,
        )


_runtime: McpRuntime | None = None


def build_runtime(settings: Settings | None = None, clients: AwsClients | None = None) -> McpRuntime:
    settings = settings or load_deployed_settings()  # a missing variable fails the cold start, by name
    return McpRuntime(settings=settings, memory=build_memory(settings, clients=clients))


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


def to_result(response: HttpResponse) -> dict[str, Any]:
    return {
        "statusCode": response.status,
        "headers": dict(response.headers),
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
    return to_result(response)
