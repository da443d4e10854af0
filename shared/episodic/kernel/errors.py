"""Typed exceptions; each face (CLI, MCP, Lambda) turns them into its own errors in one place."""

from __future__ import annotations


class EpisodicError(Exception):
    """Base class: a message a user can act on."""


class ConfigError(EpisodicError):
    """Settings are missing or contradictory."""


class ParityError(EpisodicError):
    """An index was written or queried with another embedder, dimension or rendering."""


class TenantError(EpisodicError):
    """A query or write without a tenant, or across tenants."""


class AuthError(EpisodicError):
    """A missing, unknown or revoked token."""


class ScopeError(EpisodicError):
    """A token without the scope the call needs (e.g. write)."""


class InvalidCardError(EpisodicError):
    """A distilled card breaks the schema or the card rules (code, paths, stack traces)."""


class DistillError(EpisodicError):
    """A distiller could not produce a card for a session (recorded, retried next run)."""


class RetryableDistillError(DistillError):
    """A passing failure (throttling, timeout, rate limit): try again later."""


class NotFoundError(EpisodicError):
    """No such session, card or token."""


class InvalidArgumentError(EpisodicError):
    """A tool or command argument is out of range."""


# ---------------------------------------------------------------- AWS error codes (botocore stays optional)

# Codes AWS services use for "slow down / try again": never a reason to fail a card for good.
THROTTLE_CODES = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "RequestTimeoutException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError (duck-typed, so botocore stays optional)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def error_message(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Message", "")) or str(exc)
    return str(exc)
