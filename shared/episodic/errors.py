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
