"""A session id as a person types it: the whole id, or a unique prefix of it (as git takes a commit).

Every face resolves through here before a lookup, always within the caller's tenant: a unique prefix
becomes the full id, an ambiguous one raises AmbiguousSessionError listing the matches, and an unknown
one is returned unchanged so the caller says "no episode" in its own words."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import check_tenant

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

MIN_PREFIX = 6  # a session id is a UUID: 6 hex digits name one of thousands of sessions
SHOWN = 10  # matches listed in an ambiguity error


class AmbiguousSessionError(InvalidArgumentError):
    """A typed prefix matches several sessions; the message lists them."""

    def __init__(self, typed: str, matches: Sequence[str], labels: dict[str, str] | None = None) -> None:
        self.matches = list(matches)
        more = " (and more)" if len(matches) > SHOWN else ""
        listed = "\n".join(
            f"  {m}" + (f"  {labels[m]}" if labels and labels.get(m) else "") for m in matches[:SHOWN]
        )
        super().__init__(f"{typed!r} matches several sessions{more}; type more of the id:\n{listed}")


def not_found(what: str, typed: str) -> str:
    """ "no episode with session id '967e5'", saying why when the typed id is too short to be a prefix."""
    typed = (typed or "").strip()
    short = (
        f": a prefix of a session id needs at least {MIN_PREFIX} characters"
        if len(typed) < MIN_PREFIX and re.fullmatch(r"[0-9a-fA-F-]+", typed)
        else ""
    )
    return f"no {what} {typed!r}{short}"


def resolve(typed: str, exists: Callable[[str], bool], with_prefix: Callable[[str, int], list[str]]) -> str:
    """The full id `typed` stands for; `typed` itself when nothing matches (the caller reports it)."""
    typed = (typed or "").strip()
    if not typed:
        raise InvalidArgumentError("a session id (or a unique prefix of one) is required")
    if len(typed) < MIN_PREFIX or exists(typed):
        return typed
    matches = with_prefix(typed, SHOWN + 1)
    if len(matches) > 1:
        raise AmbiguousSessionError(typed, matches)
    return matches[0] if matches else typed


class SessionsById(Protocol):
    """What resolving needs of a store: the card store and the history store both have it."""

    def get(self, tenant_id: str, session_id: str) -> object | None: ...

    def session_ids_starting(self, tenant_id: str, prefix: str, limit: int) -> list[str]: ...


def session_id_in(store: SessionsById, tenant_id: str, typed: str) -> str:
    """Resolve against one store's sessions of the tenant (cards: `memory.store`; history records)."""
    check_tenant(tenant_id)
    return resolve(
        typed,
        lambda sid: store.get(tenant_id, sid) is not None,
        lambda prefix, limit: store.session_ids_starting(tenant_id, prefix, limit),
    )


def card_session_id(memory: Memory, tenant_id: str, typed: str) -> str:
    """Resolve against the tenant's cards."""
    return session_id_in(memory.store, tenant_id, typed)


def transcript_named(store: SessionsById, tenant_id: str, typed: str) -> str:
    """What `inspect --render` reads for what a person typed: an existing path as it is; else the session id
    it is or uniquely starts (as `show` takes it), as that session's transcript while the file is there,
    or the full id (its kept trajectory) once the agent deleted it."""
    from pathlib import Path

    if Path(typed).expanduser().exists() or "/" in typed:
        return typed
    session_id = session_id_in(store, tenant_id, typed)
    source_path = str(getattr(store.get(tenant_id, session_id), "source_path", "") or "")
    return source_path if source_path and Path(source_path).is_file() else session_id
