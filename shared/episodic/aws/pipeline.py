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
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from episodic.auth import validate_tenant
from episodic.aws._calls import error_code
from episodic.errors import ConfigError, EpisodicError, InvalidArgumentError
from episodic.models import CardRecord, NotEpisode
from episodic.ports import IngestFailure, IngestLedger
from episodic.service import Memory
from episodic.settings import Settings

MAX_TRANSCRIPT_BYTES = 200 * 1024 * 1024  # a Lambda has 512 MB-10 GB of /tmp; refuse absurd objects early
DEFAULT_CARDS_PREFIX = "cards/"
DEFAULT_FAILURES_PREFIX = "failures/"

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
        return {
            "status": self.status,
            "tenant_id": self.tenant_id,
            "key": self.key,
            "session_id": self.session_id,
            "reason": self.reason,
            "archive_key": self.archive_key,
        }


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


def distill_transcript(
    transcript: TranscriptObject, *, memory: Memory, s3_client: Any, cards_prefix: str = DEFAULT_CARDS_PREFIX
) -> DistillOutcome:
    """Parse, distill and index one session; archive its card. Raises EpisodicError (after recording the
    failure with its reason in the ledger) when no card can be produced."""
    # the write path only (the MCP Lambda never loads it)
    from episodic.ingest import existing_card_verdict, ingest_trajectory

    tenant, key = transcript.tenant_id, transcript.where.main_key
    with tempfile.TemporaryDirectory(prefix="episodic-") as tmp:
        root = Path(tmp)
        for relative, data in transcript.files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        main_path = root / f"{transcript.where.session_key}.jsonl"
        sources = [s for s in memory.source.discover([str(root)]) if Path(s.main_path) == main_path]
        if not sources:
            return DistillOutcome("skipped", tenant, key, reason="not a session transcript")
        loaded = memory.source.load(sources[0])
    if isinstance(loaded, NotEpisode):
        return DistillOutcome("skipped", tenant, key, session_id=loaded.session_id, reason=loaded.reason)

    verdict = existing_card_verdict(memory, memory.store.get(tenant, loaded.session_id), loaded)
    if verdict is not None:
        return DistillOutcome(verdict, tenant, key, session_id=loaded.session_id)

    memory.store.ensure_manifest(memory.manifest)
    try:
        record = ingest_trajectory(memory, loaded, tenant)
    except EpisodicError as exc:
        _record_failure(memory, transcript, loaded.source_sha256, f"{type(exc).__name__}: {exc}")
        raise
    archive_key = _archive(s3_client, transcript.bucket, record, cards_prefix)
    if memory.ledger is not None:
        memory.ledger.clear_failure(tenant, transcript.where.session_key)
    return DistillOutcome(
        "indexed", tenant, key, session_id=record.session_id, record=record, archive_key=archive_key
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


def _record_failure(memory: Memory, transcript: TranscriptObject, sha: str, reason: str) -> None:
    if memory.ledger is None:
        return
    memory.ledger.record_failure(
        IngestFailure(
            tenant_id=transcript.tenant_id,
            session_key=transcript.where.session_key,
            path=f"s3://{transcript.bucket}/{transcript.where.main_key}",
            source_sha256=sha,
            reason=reason,
            last_attempt_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )


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


@dataclass
class AwsClients:
    """The boto3 clients the AWS faces use; created on first use, never at import time."""

    s3: Any = None
    s3vectors: Any = None
    bedrock_runtime: Any = None
    secretsmanager: Any = None

    @classmethod
    def from_settings(cls, settings: Settings) -> AwsClients:
        from episodic.aws.clients import aws_session

        session = aws_session(settings)
        return cls(
            s3=session.client("s3"),
            s3vectors=session.client("s3vectors"),
            bedrock_runtime=session.client("bedrock-runtime"),
            secretsmanager=session.client("secretsmanager"),
        )


def build_aws_memory(
    settings: Settings,
    clients: AwsClients,
    *,
    failures_prefix: str = DEFAULT_FAILURES_PREFIX,
    embedder: Any = None,
    distiller: Any = None,
    store: Any = None,
) -> Memory:
    """The Lambda's Memory: Bedrock distiller, Titan embedder, S3 Vectors store, S3 failure ledger
    (each replaceable, for tests). Never imports the local MiniLM embedder."""
    from episodic.aws.bedrock_distiller import BedrockDistiller
    from episodic.aws.s3vectors_store import S3VectorsStore
    from episodic.aws.titan_embedder import TitanEmbedder
    from episodic.parse.agents import AllAgentsSource
    from episodic.parse.claude_code import ClaudeCodeSource
    from episodic.parse.codex import CodexSource
    from episodic.parse.gemini import GeminiSource
    from episodic.scrub import Scrubber

    if store is None and not settings.vector_bucket:
        raise ConfigError("EPISODIC_VECTOR_BUCKET is required in the AWS deployment")
    if not settings.transcripts_bucket:
        raise ConfigError("EPISODIC_TRANSCRIPTS_BUCKET is required in the AWS deployment")
    chars = settings.tool_output_chars
    return Memory(
        settings=settings,
        # roots=[]: a Lambda never scans a home folder; it parses the files it is handed, in any agent's format
        source=AllAgentsSource(
            ClaudeCodeSource(scrubber := Scrubber.from_settings(settings), roots=[], tool_output_chars=chars),
            [
                CodexSource(scrubber, roots=[], tool_output_chars=chars),
                GeminiSource(scrubber, roots=[], tool_output_chars=chars),
            ],
        ),
        distiller=distiller or BedrockDistiller(clients.bedrock_runtime, settings.bedrock_model_id),
        embedder=embedder
        or TitanEmbedder(clients.bedrock_runtime, settings.titan_model_id, settings.titan_dimension),
        store=store or S3VectorsStore(clients.s3vectors, str(settings.vector_bucket), settings.vector_index),
        ledger=S3FailureLedger(clients.s3, settings.transcripts_bucket, failures_prefix),
    )
