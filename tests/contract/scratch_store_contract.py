"""The contract every ScratchStore keeps, as a reusable test base class (subclass it and provide a
`store_factory` fixture returning a callable that makes a fresh, empty store).

Tenant isolation on every read, expired records invisible at once (a frozen clock: `not_before` is passed
in), the sweep deleting them, deleting a session deleting its records, dedup by record id, embedding parity.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import InvalidArgumentError, ParityError, TenantError
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scratch.port import ScratchManifest, ScratchStore

EMBEDDER = HashingEmbedder(64)
MANIFEST = ScratchManifest(embedder_id=EMBEDDER.id, dimension=EMBEDDER.dimension)
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
WEEK_AGO = NOW - timedelta(days=7)
A, B = "tenant-a", "tenant-b"

StoreFactory = Callable[[], ScratchStore]


def record(summary: str, *, tenant: str = A, session: str = "s1", tool: str = "typecheck",
           outcome: ToolOutcome = ToolOutcome.FAIL, age_days: float = 1.0) -> ScratchRecord:  # fmt: skip
    return ScratchRecord(
        tenant_id=tenant,
        session_id=session,
        tool_name=tool,
        outcome=outcome,
        summary=summary,
        created_at=NOW - timedelta(days=age_days),
    )


def add(store: ScratchStore, *records: ScratchRecord) -> int:
    return store.add(list(records), EMBEDDER.embed([r.summary for r in records]), MANIFEST)


def ask(store: ScratchStore, text: str, tenant: str = A, k: int = 5) -> list[str]:
    return [h.record.summary for h in store.query(tenant, EMBEDDER.embed([text])[0], k, WEEK_AGO, MANIFEST)]


class ScratchStoreContract:
    @pytest.fixture()
    def store(self, store_factory: StoreFactory) -> ScratchStore:
        return store_factory()

    def test_nearest_first_with_similarities(self, store: ScratchStore) -> None:
        add(store, record("typecheck failed on middleware.ts — cannot find name UserContext"),
            record("tests failed on test_orders.py — AssertionError total mismatch", tool="tests"))  # fmt: skip
        hits = store.query(A, EMBEDDER.embed(["cannot find name UserContext"])[0], 5, WEEK_AGO, MANIFEST)
        assert hits[0].record.tool_name == "typecheck"
        assert hits[0].similarity > hits[-1].similarity
        assert all(-1.0 <= h.similarity <= 1.0 for h in hits)

    def test_another_tenants_records_are_never_returned(self, store: ScratchStore) -> None:
        add(store, record("lint failed on auth.go — errcheck", tenant=B))
        assert ask(store, "lint failed on auth.go errcheck", tenant=A) == []
        assert ask(store, "lint failed on auth.go errcheck", tenant=B) == [
            "lint failed on auth.go — errcheck"
        ]
        assert store.count(A) == 0 and store.count(B) == 1

    def test_no_tenant_is_refused(self, store: ScratchStore) -> None:
        with pytest.raises(TenantError):
            store.query("", EMBEDDER.embed(["x y"])[0], 3, WEEK_AGO, MANIFEST)

    def test_expired_records_are_invisible_at_once_and_swept(self, store: ScratchStore) -> None:
        add(store, record("build failed on main.go — undefined Handler", age_days=8),
            record("build failed on main.go — undefined Router", age_days=6.9))  # fmt: skip
        assert ask(store, "build failed on main.go undefined") == [
            "build failed on main.go — undefined Router"
        ]
        assert store.sweep(WEEK_AGO) == 1
        assert store.count() == 1
        assert store.sweep(WEEK_AGO) == 0

    def test_records_dated_in_the_future_are_swept(self, store: ScratchStore) -> None:
        add(store, record("build failed on main.go — dated 2099", age_days=-365 * 70),
            record("build failed on main.go — dated today", age_days=0.5))  # fmt: skip
        assert store.sweep(WEEK_AGO) == 0  # without `after`, only the expired go
        assert store.sweep(WEEK_AGO, after=NOW + timedelta(days=1)) == 1
        assert ask(store, "build failed on main.go") == ["build failed on main.go — dated today"]

    def test_deleting_a_session_deletes_its_records_only(self, store: ScratchStore) -> None:
        add(store, record("tests failed — x", session="s1"), record("tests failed — y", session="s2"),
            record("tests failed — z", session="s1", tenant=B))  # fmt: skip
        assert store.delete_session(A, "s1") == 1
        assert ask(store, "tests failed") == ["tests failed — y"]
        assert store.count(B) == 1

    def test_the_same_outcome_is_stored_once(self, store: ScratchStore) -> None:
        one = record("patch rejected on users.py — import cycle auth users", tool="patch")
        assert add(store, one) == 1
        assert add(store, one) == 0
        assert store.known_ids(A, [one.record_id, "0" * 32]) == {one.record_id}
        assert store.count(A) == 1

    def test_another_embedding_is_a_parity_error(self, store: ScratchStore) -> None:
        add(store, record("lint failed — x"))
        other = ScratchManifest(embedder_id="other-model", dimension=MANIFEST.dimension)
        with pytest.raises(ParityError, match="other-model"):
            store.query(A, EMBEDDER.embed(["lint"])[0], 3, WEEK_AGO, other)
        with pytest.raises(ParityError):
            store.query(A, np.ones(MANIFEST.dimension + 1), 3, WEEK_AGO, MANIFEST)

    def test_zero_vectors_and_bad_k_are_refused(self, store: ScratchStore) -> None:
        with pytest.raises(InvalidArgumentError):
            store.add([record("x y z")], np.zeros((1, MANIFEST.dimension)), MANIFEST)
        with pytest.raises(InvalidArgumentError):
            store.query(A, EMBEDDER.embed(["x"])[0], 0, WEEK_AGO, MANIFEST)

    def test_k_bounds_the_answer(self, store: ScratchStore) -> None:
        add(store, *(record(f"tests failed on test_{i}.py — assertion {i}", tool="tests") for i in range(8)))
        assert len(ask(store, "tests failed assertion", k=3)) == 3
