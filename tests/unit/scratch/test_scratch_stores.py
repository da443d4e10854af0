"""The scratch-store contract against SQLite and against the OpenSearch Serverless adapter on the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from contract.scratch_store_contract import ScratchStoreContract
from episodic.aws.opensearch_scratch import OpenSearchScratchStore
from episodic.scratch.sqlite_store import SQLiteScratchStore
from fakes.opensearch_fake import FakeOpenSearch


class TestSQLiteScratchStore(ScratchStoreContract):
    @pytest.fixture()
    def store_factory(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        return lambda: SQLiteScratchStore(tmp_path / "scratch.sqlite3")


class TestOpenSearchScratchStore(ScratchStoreContract):
    @pytest.fixture()
    def store_factory(self):  # type: ignore[no-untyped-def]
        return lambda: OpenSearchScratchStore(FakeOpenSearch(), "episodic-scratch")
