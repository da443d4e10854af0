"""Issue 14 item 6: tenant isolation holds for ranking, not only for rows: another tenant's writes never
change what (or in which order, with which scores) a tenant's search returns. Over raw HTTP on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.models import Outcome
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.mcp_testkit import _card, build_memory, populate, post, rpc, settings_for

B_CARDS = [
    ("b-1", "the nightly export job times out when the warehouse snapshot is locked"),
    ("b-2", "export of invoices is slow because the snapshot query scans every partition"),
    ("b-3", "the warehouse connection pool runs dry during the export window"),
    ("b-4", "snapshot restore fails with a checksum mismatch after the upgrade"),
    ("b-5", "the job scheduler skips the export when the previous run is still locked"),
]
QUERIES = [
    "export job times out on a locked snapshot",
    "warehouse snapshot locked during the nightly export",
    "invoice export slow partition scan",
]


def _episodes(tenant: str, cards: list[tuple[str, str]]) -> list[tuple[str, str, str, str, Any]]:
    return [
        (
            tenant,
            sid,
            "etl",
            "2026-01-05",
            _card(problem, "the lock was held by the backup", Outcome.VERIFIED, ["etl"]),
        )
        for sid, problem in cards
    ]


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str, Memory]]:
    settings = settings_for(tmp_path / "home")
    memory = build_memory(settings)
    populate(memory, _episodes("b", B_CARDS))
    token = LocalTokenStore(settings.tokens_path).add("b")
    with BackgroundServer(build_endpoint(settings, memory)) as srv:
        yield srv.url, token, memory


def _search(url: str, token: str, query: str) -> list[tuple[str, float, float]]:
    args = {"query": query, "k": 5, "include_unverified": True}
    status, _, body = post(
        url,
        rpc("tools/call", {"name": "search_traces", "arguments": args}),
        {"Authorization": f"Bearer {token}"},
    )
    assert status == 200, body
    results = json.loads(body)["result"]["structuredContent"]["results"]
    return [(r["session_id"], r["score"], r["similarity"]) for r in results]


def test_another_tenants_writes_never_move_this_tenants_results(served: tuple[str, str, Memory]) -> None:
    url, token, memory = served
    before = {q: _search(url, token, q) for q in QUERIES}
    assert before[QUERIES[0]] and before[QUERIES[0]][0][0] == "b-1", before
    # tenant a writes 25 cards full of b's query words: "export", "snapshot", "locked" become common
    a_cards = [
        (f"a-{i}", f"export snapshot locked export job number {i} on the warehouse") for i in range(25)
    ]
    populate(memory, _episodes("a", a_cards))
    after = {q: _search(url, token, q) for q in QUERIES}
    assert after == before
