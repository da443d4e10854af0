"""The AWS write path: one transcript object in S3 -> parse (via a temp folder) -> distill -> embed ->
upsert into S3 Vectors -> archive the card beside the transcripts. The distill Lambda is a thin face over it.

Key layout: `<prefix><tenant>/<session-id>.jsonl`; a session's subagent files live under
`<prefix><tenant>/<session-id>/subagents/` and are folded into it when the main file is distilled.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from episodic.aws._calls import error_code
from episodic.kernel.auth import validate_tenant
from episodic.kernel.errors import EpisodicError, InvalidArgumentError
from episodic.kernel.memory import Memory
from episodic.kernel.models import CardRecord, NotEpisode, Trajectory
from episodic.kernel.ports import IngestFailure, IngestLedger, TranscriptSource

MAX_TRANSCRIPT_BYTES = 200 * 1024 * 1024  # a Lambda has 512 MB-10 GB of /tmp; refuse absurd objects early
DEFAULT_CARDS_PREFIX = "cards/"
DEFAULT_FAILURES_PREFIX = "failures/"

SUMMARY_FIELDS = ("status", "tenant_id", "key", "session_id", "reason", "archive_key")
Status = Literal["indexed", "unchanged", "kept_better", "skipped"]


@dataclass(frozen=True)
class TranscriptKey:
    """Where a session lives in the bucket, parsed from the object key."""

    tenant_id: str
    session_key: str
    main_key: str

    @property
    def companions_prefix(self) -> str:
        return self.main_key[: -len(".jsonl")] + "/"


def parse_transcript_key(key: str, prefix: str) -> TranscriptKey | None:
    """`<prefix><tenant>/<session>.jsonl` -> TranscriptKey; a subagent file -> None (folded into its parent).

    Anything else raises InvalidArgumentError: the tenant comes from the key, so the layout is strict."""
    if not key.startswith(prefix) or not key.endswith(".jsonl"):
        raise InvalidArgumentError(
            f"object key {key!r} is not a transcript: expected {prefix}<tenant>/<session>.jsonl"
        )
    parts = PurePosixPath(key[len(prefix) :]).parts
    if len(parts) == 2:
        tenant, file_name = parts
        session_key = file_name[: -len(".jsonl")]
        if not session_key or session_key.startswith("."):
            raise InvalidArgumentError(f"object key {key!r} has no session id")
        return TranscriptKey(validate_tenant(tenant), session_key, key)
    if len(parts) >= 4 and parts[2] == "subagents":
        validate_tenant(parts[0])
        return None
    raise InvalidArgumentError(
        f"object key {key!r} does not follow {prefix}<tenant>/<session>.jsonl "
        f"(or {prefix}<tenant>/<session>/subagents/<agent>.jsonl)"
    )


@dataclass(frozen=True)
class TranscriptObject:
    """A session's bytes as read from S3: the main file plus its subagent files (relative paths)."""

    bucket: str
    where: TranscriptKey
    files: dict[str, bytes]  # relative path -> bytes; "<session>.jsonl" is the main file

    @property
    def tenant_id(self) -> str:
        return self.where.tenant_id

    @property
    def content_sha256(self) -> str:
        """Hash of every byte of the session (main + subagents, by path): the idempotency key."""
        digest = hashlib.sha256()
        for name in sorted(self.files):
            digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(self.files[name]).digest())
        return digest.hexdigest()

    @property
    def total_bytes(self) -> int:
        return sum(len(b) for b in self.files.values())

    def idempotency_payload(self) -> dict[str, str]:
        return {
            "tenant_id": self.tenant_id,
            "key": self.where.main_key,
            "content_sha256": self.content_sha256,
        }


@dataclass
class DistillOutcome:
    status: Status
    tenant_id: str
    key: str
    session_id: str | None = None
    reason: str = ""
    record: CardRecord | None = None
    archive_key: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What the Lambda logs and the idempotency record keeps (no card text)."""
        return {name: getattr(self, name) for name in SUMMARY_FIELDS}


def _read(s3_client: Any, bucket: str, key: str) -> bytes:
    try:
        response = s3_client.get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        if error_code(exc) in ("NoSuchKey", "404"):
            raise InvalidArgumentError(f"s3://{bucket}/{key} no longer exists") from exc
        raise
    length = int(response.get("ContentLength") or 0)
    if length > MAX_TRANSCRIPT_BYTES:
        raise InvalidArgumentError(f"s3://{bucket}/{key} is {length} bytes (limit {MAX_TRANSCRIPT_BYTES})")
    body: bytes = response["Body"].read()
    return body


def _list_keys(s3_client: Any, bucket: str, prefix: str) -> Iterator[str]:
    paginator = s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []) or []:
            yield item["Key"]


def fetch_transcript(s3_client: Any, bucket: str, key: str, *, prefix: str) -> TranscriptObject | None:
    """Read a session (main file + subagent files) from S3; None when `key` is a subagent file."""
    where = parse_transcript_key(key, prefix)
    if where is None:
        return None
    files = {f"{where.session_key}.jsonl": _read(s3_client, bucket, where.main_key)}
    for companion in _list_keys(s3_client, bucket, where.companions_prefix):
        relative = companion[len(where.companions_prefix) :]
        parts = PurePosixPath(relative).parts
        if len(parts) >= 2 and parts[0] == "subagents" and relative.endswith(".jsonl"):
            files[f"{where.session_key}/{relative}"] = _read(s3_client, bucket, companion)
    return TranscriptObject(bucket=bucket, where=where, files=files)


def load_transcript(transcript: TranscriptObject, source: TranscriptSource) -> Trajectory | NotEpisode | None:
    """Parse an S3 session with the core's own discovery and loader; None when it holds no session file.

    The bytes go through a temporary folder because discovery (subagent grouping, internal-agent files)
    and loading are defined over files; the loaded session then names its S3 objects, not the folder."""
    where = transcript.where
    with tempfile.TemporaryDirectory(prefix="episodic-") as tmp:
        root = Path(tmp)
        for relative, data in transcript.files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        main_path = root / f"{where.session_key}.jsonl"
        sources = [s for s in source.discover([str(root)]) if Path(s.main_path) == main_path]
        if not sources:
            return None
        loaded = source.load(sources[0])

    def s3_uri(path: str) -> str:
        return f"s3://{transcript.bucket}/{where.main_key[: -len(where.session_key + '.jsonl')]}" + (
            Path(path).relative_to(root).as_posix()
        )

    located = loaded.source.model_copy(
        update={
            "main_path": s3_uri(loaded.source.main_path),
            "subagent_paths": [s3_uri(p) for p in loaded.source.subagent_paths],
            "skipped_agent_paths": [s3_uri(p) for p in loaded.source.skipped_agent_paths],
        }
    )
    return loaded.model_copy(update={"source": located})


def distill_transcript(
    transcript: TranscriptObject, *, memory: Memory, s3_client: Any, cards_prefix: str = DEFAULT_CARDS_PREFIX
) -> DistillOutcome:
    """Parse, distill and index one session (`ingest.ingest_one`, the same rules as a local run); archive
    its card. When no card can be produced the failure is recorded by the core and its error re-raised, so
    that SQS retries the message and finally moves it to the dead-letter queue."""
    # the write path only (the MCP Lambda never loads it)
    from episodic.core.ingest import ingest_one

    tenant, key = transcript.tenant_id, transcript.where.main_key
    loaded = load_transcript(transcript, memory.source)
    if loaded is None:
        return DistillOutcome("skipped", tenant, key, reason="not a session transcript")
    outcome = ingest_one(memory, tenant, loaded)
    if outcome.status == "failed":
        raise outcome.error or EpisodicError(outcome.reason)
    if outcome.status != "indexed" or outcome.record is None:
        return DistillOutcome(
            outcome.status, tenant, key, session_id=outcome.session_id, reason=outcome.reason
        )
    archive_key = _archive(s3_client, transcript.bucket, outcome.record, cards_prefix)
    return DistillOutcome(
        "indexed",
        tenant,
        key,
        session_id=outcome.session_id,
        record=outcome.record,
        archive_key=archive_key,
    )


def distill_object(
    s3_client: Any,
    bucket: str,
    key: str,
    *,
    memory: Memory,
    prefix: str | None = None,
    cards_prefix: str = DEFAULT_CARDS_PREFIX,
) -> DistillOutcome:
    """fetch_transcript + distill_transcript, for callers without their own idempotency layer."""
    transcript = fetch_transcript(s3_client, bucket, key, prefix=prefix or memory.settings.transcripts_prefix)
    if transcript is None:
        return DistillOutcome("skipped", "", key, reason="subagent file: folded into its parent session")
    return distill_transcript(transcript, memory=memory, s3_client=s3_client, cards_prefix=cards_prefix)


def _archive(s3_client: Any, bucket: str, record: CardRecord, prefix: str) -> str:
    from episodic.aws.card_archive import archive_card

    # the bucket's default encryption (SSE-KMS with the stack's key) applies; no key id needed here
    return archive_card(s3_client, bucket, record, prefix)


class S3FailureLedger(IngestLedger):
    """Failure records as JSON objects `<prefix><tenant>/<session>.json` beside the transcripts."""

    def __init__(self, s3_client: Any, bucket: str, prefix: str = DEFAULT_FAILURES_PREFIX) -> None:
        self.client = s3_client
        self.bucket = bucket
        self.prefix = prefix

    def _key(self, tenant_id: str, session_key: str) -> str:
        return f"{self.prefix}{tenant_id}/{session_key}.json"

    def record_failure(self, failure: IngestFailure) -> None:
        body = json.dumps(failure.__dict__, indent=2).encode("utf-8")
        self.client.put_object(
            Bucket=self.bucket,
            Key=self._key(failure.tenant_id, failure.session_key),
            Body=body,
            ContentType="application/json",
        )

    def clear_failure(self, tenant_id: str, session_key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(tenant_id, session_key))

    def failures(self, tenant_id: str | None = None) -> list[IngestFailure]:
        scope = f"{self.prefix}{tenant_id}/" if tenant_id else self.prefix
        found = []
        for key in _list_keys(self.client, self.bucket, scope):
            data = json.loads(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())
            found.append(IngestFailure(**data))
        return found
