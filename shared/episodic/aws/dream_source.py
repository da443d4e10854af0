"""The week's sessions in the AWS deployment: cards from the deployed index (S3 Vectors, read only) and
each session's transcript from the bucket (`<prefix><tenant>/<session>.jsonl` and its subagents), parsed
by the core's own loader. The same `WeekSource` port as the local adapter (the client is given)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from episodic.aws.pipeline import fetch_transcript, load_transcript
from episodic.dream.source import SessionDigest, WeekSource, digest_of, earliest_in, records_in
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import CardRecord, Trajectory

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory


class BucketWeekSource(WeekSource):
    def __init__(self, memory: Memory, s3_client: Any, bucket: str, prefix: str) -> None:
        self.memory = memory
        self.s3 = s3_client
        self.bucket = bucket
        self.prefix = prefix

    def _trajectory(self, tenant_id: str, session_id: str) -> Trajectory | None:
        key = f"{self.prefix}{tenant_id}/{session_id}.jsonl"
        try:
            found = fetch_transcript(self.s3, self.bucket, key, prefix=self.prefix)
        except InvalidArgumentError:  # no transcript under that key: the card alone is surveyed
            return None
        loaded = load_transcript(found, self.memory.source) if found is not None else None
        return loaded if isinstance(loaded, Trajectory) else None

    def sessions(self, tenant_id: str, since: datetime, until: datetime) -> list[SessionDigest]:
        return [self.digest(r) for r in records_in(self.memory.store, tenant_id, since, until)]

    def digest(self, record: CardRecord) -> SessionDigest:
        return digest_of(record, self._trajectory(record.tenant_id, record.session_id))

    def earliest(self, tenant_id: str) -> datetime | None:
        return earliest_in(self.memory.store, tenant_id)

    def deep_detail(self, digest: SessionDigest) -> Trajectory | None:
        return self._trajectory(digest.record.tenant_id, digest.session_id)


def bucket_tenants(s3_client: Any, bucket: str, prefix: str) -> list[str]:
    """The tenants that have transcripts in the bucket (`<prefix><tenant>/`)."""
    tenants: list[str] = []
    for page in s3_client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, Delimiter="/"
    ):
        tenants += [p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", [])]
    return sorted(tenants)
