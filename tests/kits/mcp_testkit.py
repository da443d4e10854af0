"""A small two-tenant index (HashingEmbedder + SQLite store) and helpers for the MCP, hook and tenancy tests."""

from __future__ import annotations

import errno
import http.client
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from episodic.cards.write import embed_card
from episodic.kernel.memory import Memory
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome
from episodic.kernel.settings import Settings, load_settings

ALPHA, BETA = "alpha", "beta"
NO_MATCH_QUERY = "zebra quantum xylophone marmalade"


def _card(problem: str, insight: str, outcome: Outcome, tags: list[str], **extra: Any) -> Card:
    return Card(
        problem=problem,
        steps=extra.get(
            "steps", ["reproduced the failure", "narrowed it down", "fixed and re-ran the check"]
        ),
        key_decisions=extra.get("key_decisions", ["kept the change minimal to isolate the cause"]),
        insight=insight,
        dead_ends=extra.get("dead_ends", []),
        misleading_intuitions=extra.get("misleading_intuitions", []),
        critical_checks=extra.get("critical_checks", []),
        outcome=outcome,
        tags=tags,
    )


# (tenant, session_id, project, day, card)
EPISODES: list[tuple[str, str, str, str, Card]] = [
    (
        ALPHA,
        "alpha-pytest-fixture",
        "shop",
        "2026-01-12",
        _card(
            "pytest cannot find a fixture after the conftest file was moved into a subpackage",
            "fixtures in a conftest are only visible to tests below its directory; the conftest belongs at the rootdir",
            Outcome.VERIFIED,
            ["python", "pytest"],
            dead_ends=["reinstalling pytest and clearing the cache changed nothing"],
            misleading_intuitions=["the fixture name looked misspelled but was correct"],
            critical_checks=["pytest --fixtures listed the fixture only from the subpackage"],
        ),
    ),
    (
        ALPHA,
        "alpha-docker-cache",
        "shop",
        "2026-02-03",
        _card(
            "docker build fails with permission denied while writing the npm cache",
            "the build ran as a non-root user without a writable cache directory",
            Outcome.UNVERIFIED,
            ["docker", "npm"],
        ),
    ),
    (
        ALPHA,
        "alpha-postgres-pool",
        "billing",
        "2026-03-20",
        _card(
            "postgres refuses connections under load with too many clients already",
            "each worker opened its own pool; one shared pool sized below max_connections fixed it",
            Outcome.VERIFIED,
            ["postgres", "python"],
            dead_ends=["raising max_connections only moved the failure"],
        ),
    ),
    (
        BETA,
        "beta-pytest-fixture",
        "beta-secret-project",
        "2026-01-15",
        _card(
            "pytest cannot find a fixture after the conftest file was moved into a subpackage of the app",
            "beta tenant private insight about conftest placement",
            Outcome.VERIFIED,
            ["python", "pytest"],
        ),
    ),
    (
        BETA,
        "beta-postgres-pool",
        "beta-secret-project",
        "2026-03-21",
        _card(
            "postgres refuses connections under load with too many clients already in the beta service",
            "beta tenant private insight about connection pools",
            Outcome.VERIFIED,
            ["postgres"],
        ),
    ),
]
SESSIONS_BY_TENANT = {t: {sid for tt, sid, *_ in EPISODES if tt == t} for t in (ALPHA, BETA)}


def settings_for(home: Path) -> Settings:
    return load_settings(home=home, embedder="hashing")


def build_memory(settings: Settings) -> Memory:
    """The real core (SQLite store, hashing embedder) with the registered features, none of them built (a
    test adds the part it needs); the server needs no source or distiller."""
    from episodic.assembly import FEATURES
    from episodic.embed.hashing import HashingEmbedder
    from episodic.store.sqlite import SQLiteStore

    settings.home.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(settings.db_path)
    return Memory(
        settings=settings,
        source=None,  # type: ignore[arg-type]
        distiller=None,  # type: ignore[arg-type]
        embedder=HashingEmbedder(settings.hashing_dimension),
        store=store,
        ledger=store,
        features=FEATURES,
    )


def populate(memory: Memory, episodes: list[tuple[str, str, str, str, Card]] = EPISODES) -> None:
    manifest = memory.manifest
    memory.store.ensure_manifest(manifest)
    for tenant, session_id, project, day, card in episodes:
        started = datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC)
        record = CardRecord(
            card=card,
            session_id=session_id,
            tenant_id=tenant,
            project=project,
            started_at=started,
            ended_at=started.replace(hour=10),
            source_sha256="0" * 64,
            distiller=DistillerInfo(kind="heuristic"),
            indexed_at=datetime.now(UTC),
        )
        memory.store.upsert(record, embed_card(memory, card), manifest)


def connect_when_ports_free(conn: http.client.HTTPConnection, seconds: float = 30.0) -> None:
    """Connect, waiting out a moment with no free loopback port (EADDRNOTAVAIL on a loaded machine running
    many tests at once): that is the machine's state, not the server's answer under test."""
    ends = time.monotonic() + seconds
    while True:
        try:
            conn.connect()
            return
        except OSError as exc:
            if exc.errno != errno.EADDRNOTAVAIL or time.monotonic() > ends:
                raise
            time.sleep(0.1)


def post(
    url: str,
    payload: Any,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request with http.client (no MCP client logic in the way)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    connect_when_ports_free(conn)
    try:
        body = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else None)
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        base.update(headers or {})
        conn.request(method, parts.path or "/", body=body, headers=base)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def rpc(method: str, params: dict[str, Any] | None = None, msg_id: int | str | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if msg_id is not None:
        message["id"] = msg_id
    return message
