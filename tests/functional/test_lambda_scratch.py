"""Scratch memory in the distill Lambda: the daily schedule's sweep event deletes expired records from the
OpenSearch collection (the fake) and answers with the count; S3 events still go the distill path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from episodic.aws.opensearch_scratch import OpenSearchScratchStore
from episodic.embed.hashing import HashingEmbedder
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scratch.service import ScratchMemory
from episodic.scrub import Scrubber
from fakes.opensearch_fake import FakeOpenSearch
from kits.lambda_env import LambdaContext, LocalCloud, local_cloud

from lambdas.distill import handler as distill


@pytest.fixture()
def cloud(episodic_home: Path) -> Iterator[LocalCloud]:
    with local_cloud(episodic_home) as c:
        yield c


def test_the_daily_sweep_event_deletes_expired_records(cloud: LocalCloud) -> None:
    rt = distill.runtime()
    embedder = HashingEmbedder(64)
    scratch = ScratchMemory(
        rt.settings, OpenSearchScratchStore(FakeOpenSearch(), "episodic-scratch"), embedder, Scrubber()
    )
    rt.memory.parts["scratch"] = scratch
    now = datetime.now(UTC)
    records = [
        ScratchRecord(
            tenant_id="acme",
            session_id=f"s{i}",
            tool_name="tests",
            outcome=ToolOutcome.FAIL,
            summary=f"tests failed — case {i}",
            created_at=now - timedelta(days=age),
        )
        for i, age in enumerate((10, 1))
    ]
    scratch.store.add(records, embedder.embed([r.summary for r in records]), scratch.manifest)
    assert distill.handler({"episodic": "scratch-sweep"}, LambdaContext()) == {"swept": 1}
    assert scratch.store.count("acme") == 1
