"""Which S3 Vectors search runs, and why: the SDK's QueryVectors model and the index's GetIndex answer."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from episodic.aws.s3vectors_store import S3VectorsStore
from episodic.aws.search_mode import (
    HYBRID,
    TEXT_QUERY_PARAMETERS,
    VECTOR_ONLY,
    missing_text_query_parameters,
    search_mode,
    store_search_mode,
)
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

ENHANCED = {
    "indexMode": "ENHANCED",
    "metadataConfiguration": {"textSearchConfigurations": [{"metadataKey": "text", "language": "en"}]},
}


def _model(query_members: set[str], index_members: set[str]) -> Any:
    """A client whose service model knows only these parameters (as an older botocore's does)."""

    def operation_model(name: str) -> Any:
        if name == "QueryVectors":
            return SimpleNamespace(input_shape=SimpleNamespace(members=dict.fromkeys(query_members)))
        index = SimpleNamespace(members=dict.fromkeys(index_members))
        return SimpleNamespace(output_shape=SimpleNamespace(members={"index": index}))

    return SimpleNamespace(
        meta=SimpleNamespace(service_model=SimpleNamespace(operation_model=operation_model))
    )


OLD_SDK = _model({"vectorBucketName", "indexName", "topK", "queryVector", "filter"}, {"dimension"})
NEW_SDK = _model({"queryVector", *TEXT_QUERY_PARAMETERS}, {"dimension", "indexMode"})


def test_this_botocore_sends_the_hybrid_parameters() -> None:
    client = boto3.client(
        "s3vectors", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    assert missing_text_query_parameters(client) == []
    assert search_mode(client, ENHANCED, "text").mode == HYBRID


def test_an_sdk_without_query_texts_is_vector_only_and_says_which_version_to_bundle() -> None:
    assert missing_text_query_parameters(OLD_SDK) == list(TEXT_QUERY_PARAMETERS)
    mode = search_mode(OLD_SDK, ENHANCED, "text")
    assert mode.mode == VECTOR_ONLY and "queryTexts" in mode.reason and "1.44.8" in mode.reason


@pytest.mark.parametrize(
    ("index", "reason"),
    [
        ({**ENHANCED, "indexMode": "CLASSIC"}, "CLASSIC, not ENHANCED"),
        ({"dimension": 16}, "unreported"),
        ({"indexMode": "ENHANCED", "metadataConfiguration": {}}, "no full-text search"),
    ],
)
def test_an_index_without_full_text_search_is_vector_only(index: dict[str, Any], reason: str) -> None:
    mode = search_mode(NEW_SDK, index, "text")
    assert mode.mode == VECTOR_ONLY and reason in mode.reason


def test_the_store_on_an_enhanced_index_stays_vector_only_with_an_old_sdk() -> None:
    fake = FakeS3VectorsClient()
    make_index(fake, "vectors", "episodes", 16)
    fake.meta = OLD_SDK.meta  # type: ignore[attr-defined]
    store = S3VectorsStore(fake, "vectors", "episodes")
    assert store.hybrid is False
    assert "queryTexts" in store.search_mode().reason


def test_the_store_mode_is_logged_and_a_failing_get_index_is_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeS3VectorsClient()
    make_index(fake, "vectors", "episodes", 16)
    log = logging.getLogger("search-mode-test")
    with caplog.at_level(logging.INFO, logger="search-mode-test"):
        mode = store_search_mode(S3VectorsStore(fake, "vectors", "episodes"), log=log)
    assert mode is not None and mode.hybrid
    assert any(r.getMessage() == "search mode" and r.search_mode == HYBRID for r in caplog.records)  # type: ignore[attr-defined]
    assert store_search_mode(S3VectorsStore(fake, "vectors", "missing"), log=log) is None
    assert store_search_mode(object()) is None  # a store without modes (OpenSearch, SQLite)
