"""HTTP API Lambda authorizer (REQUEST, payload 2.0, simple responses): bearer token -> tenant.

Tokens are checked against the SHA-256 hashes in the Secrets Manager secret; the answer (cached by
API Gateway for 1 minute per Authorization header) carries the tenant to the MCP Lambda.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from episodic.kernel.auth import Authenticator
from episodic.kernel.errors import AuthError
from episodic.kernel.settings import load_settings

logger = Logger()
tracer = Tracer()


@dataclass
class AuthorizerRuntime:
    authenticator: Authenticator


_runtime: AuthorizerRuntime | None = None


def build_runtime() -> AuthorizerRuntime:
    from episodic.aws.clients import AwsClients
    from episodic.aws.secrets_auth import SecretsManagerAuthenticator

    settings = load_settings()
    client = AwsClients(settings).get("secretsmanager")
    return AuthorizerRuntime(SecretsManagerAuthenticator(client, settings.auth_secret_id))


def runtime() -> AuthorizerRuntime:
    global _runtime
    if _runtime is None:
        _runtime = build_runtime()
    return _runtime


def set_runtime(value: AuthorizerRuntime | None) -> None:
    global _runtime
    _runtime = value


def bearer_token(headers: dict[str, str] | None) -> str | None:
    """The token of `Authorization: Bearer <token>` (HTTP API lower-cases header names)."""
    raw = (headers or {}).get("authorization", "")
    scheme, _, token = raw.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    token = bearer_token(event.get("headers"))
    try:
        principal = runtime().authenticator.authenticate(token)
    except AuthError as exc:
        logger.info("denied", extra={"reason": str(exc), "route": event.get("routeKey")})
        return {"isAuthorized": False}
    # an unreadable secret (ConfigError) raises: API Gateway answers 500 and the errors alarm fires
    return {
        "isAuthorized": True,
        "context": {"tenant": principal.tenant_id, "scopes": " ".join(sorted(principal.scopes))},
    }
