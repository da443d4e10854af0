"""`episodic harvest`: upload scrubbed session transcripts to the transcripts bucket, once per content.

One object per session at `{prefix}{tenant}/{session_id}.jsonl` (main file lines, then the folded
subagent lines), metadata `source-sha256`, `session-id`, `tenant`, `harvest-version`. A session whose
hash matches the last successful upload (local state, else the object's metadata) is not uploaded again;
a grown one is. Sessions modified within the quiet period are left for the next run.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from episodic.harvest.body import ObjScrubber, build_body, read_source_files
from episodic.harvest.state import HarvestState
from episodic.kernel.auth import validate_tenant
from episodic.kernel.errors import InvalidArgumentError, error_code
from episodic.kernel.models import NotEpisode, SessionSource
from episodic.kernel.ports import TranscriptSource
from episodic.sessions.scope import SCOPE_REASON_PREFIX

HARVEST_VERSION = "1"
QUIET_REASON = "still being written (quiet period)"
DEFAULT_MULTIPART_THRESHOLD = 8 * 1024 * 1024
# errors that no other session would escape: stop the run instead of failing every session the same way
_FATAL_CODES = frozenset(
    {
        "NoSuchBucket",
        "InvalidAccessKeyId",
        "ExpiredToken",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "KMS.NotFoundException",
    }
)


class Outcome(StrEnum):
    UPLOADED = "uploaded"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass
class HarvestReport:
    bucket: str
    tenant: str
    dry_run: bool = False
    found: int = 0
    selected: int = 0
    uploaded: list[str] = field(default_factory=list)  # session ids (dry run: would be uploaded)
    uploaded_keys: dict[str, str] = field(default_factory=dict)  # session id -> object key
    uploaded_at: dict[str, float] = field(default_factory=dict)  # session id -> epoch seconds
    body_sha256: dict[str, str] = field(default_factory=dict)  # session id -> sha256 of the uploaded bytes
    source_sha256: dict[str, str] = field(default_factory=dict)  # session id -> source-sha256
    unchanged: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session, reason)
    bytes_uploaded: int = 0
    lines_dropped: int = 0
    secrets_redacted: Counter[str] = field(default_factory=Counter)
    aborted: str | None = None
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    finished_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "tenant": self.tenant,
            "dry_run": self.dry_run,
            "found": self.found,
            "selected": self.selected,
            "uploaded": len(self.uploaded),
            "uploaded_sessions": list(self.uploaded),
            "unchanged": len(self.unchanged),
            "skipped": dict(self.skipped),
            "failed": [{"session": s, "reason": r} for s, r in self.failed],
            "bytes_uploaded": self.bytes_uploaded,
            "lines_dropped": self.lines_dropped,
            "secrets_redacted": dict(self.secrets_redacted),
            "aborted": self.aborted,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


def safe_key_part(name: str, value: str) -> str:
    if not value or "/" in value or value.startswith(".") or len(value) > 256 or not value.isprintable():
        raise InvalidArgumentError(f"{name} {value!r} cannot name an object in the bucket")
    return value


def object_key(prefix: str, tenant: str, session_id: str) -> str:
    """`{prefix}{tenant}/{session_id}.jsonl`: the tenant checked by the same rule the pipeline applies."""
    return f"{prefix}{validate_tenant(tenant)}/{safe_key_part('session id', session_id)}.jsonl"


def newest_mtime(source: SessionSource) -> float:
    """The newest modification time of any of the session's files (internal agents included)."""
    newest = source.mtime
    for path in (*source.paths, *source.skipped_agent_paths):
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except OSError:
            continue
    return newest


def select_sessions(
    sessions: Iterable[SessionSource],
    report: HarvestReport,
    *,
    now: float,
    quiet_minutes: float | None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[SessionSource]:
    """The sessions to harvest, most recent first: not in the quiet period, active since `since`, at most `limit`."""
    stamped = [(newest_mtime(s), s) for s in sessions]
    report.found += len(stamped)
    stamped.sort(key=lambda item: (-item[0], item[1].main_path))
    chosen: list[SessionSource] = []
    cutoff = since.timestamp() if since is not None else None
    for mtime, source in stamped:
        if quiet_minutes is not None and now - mtime < quiet_minutes * 60:
            report.skipped[QUIET_REASON] += 1
        elif cutoff is not None and mtime < cutoff:
            report.skipped["not modified since --since"] += 1
        elif limit is not None and len(chosen) >= limit:
            report.skipped["beyond --limit"] += 1
        else:
            chosen.append(source)
    report.selected += len(chosen)
    return chosen


def aws_error_code(exc: BaseException) -> str:
    """The AWS error code of the exception or of its cause (S3 transfer wraps ClientError), else its type."""
    code = error_code(exc)
    if code:
        return code
    cause = exc.__cause__ or exc.__context__
    return aws_error_code(cause) if cause is not None and cause is not exc else type(exc).__name__


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class Harvester:
    """Uploads sessions one at a time; the state is saved after each success, so a run can stop anywhere."""

    def __init__(
        self,
        s3_client: Any,
        source: TranscriptSource,
        scrubber: ObjScrubber,
        state: HarvestState,
        *,
        bucket: str,
        tenant: str,
        prefix: str = "transcripts/",
        kms_key_id: str | None = None,
        dry_run: bool = False,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunksize: int = DEFAULT_MULTIPART_THRESHOLD,
        clock: Callable[[], float] = time.time,
    ) -> None:
        validate_tenant(tenant)
        self.s3 = s3_client
        self.source = source
        self.scrubber = scrubber
        self.state = state
        self.bucket = bucket
        self.tenant = tenant
        self.prefix = prefix
        self.kms_key_id = kms_key_id
        self.dry_run = dry_run
        self.multipart_threshold = multipart_threshold
        self.multipart_chunksize = max(multipart_chunksize, 5 * 1024 * 1024)  # S3's minimum part size
        self.clock = clock
        self._head_allowed = True
        self._keys_this_run: set[str] = set()

    def new_report(self) -> HarvestReport:
        return HarvestReport(bucket=self.bucket, tenant=self.tenant, dry_run=self.dry_run)

    def run(
        self,
        sessions: Sequence[SessionSource],
        report: HarvestReport,
        progress: Callable[[SessionSource], None] | None = None,
    ) -> HarvestReport:
        for session in sessions:
            if report.aborted:
                report.skipped["not tried: the run stopped early"] += 1
            else:
                self.harvest_one(session, report)
            if progress:
                progress(session)
        report.finished_at = datetime.now(UTC).isoformat()
        return report

    def harvest_one(self, session: SessionSource, report: HarvestReport) -> Outcome:
        name = Path(session.main_path).stem
        try:
            files, sha = read_source_files(session)
        except OSError as exc:
            report.skipped[f"unreadable ({type(exc).__name__})"] += 1
            return Outcome.SKIPPED
        known = self.state.known_source(session.main_path, self.bucket)
        if known and known["sha256"] == sha and self.state.sha_for(self.bucket, known["key"]) == sha:
            report.unchanged.append(Path(known["key"]).stem)  # unchanged since it was uploaded: no parse
            return Outcome.UNCHANGED
        reason = self.state.known_skip(session.main_path, sha)
        if reason is not None:
            report.skipped[f"not an episode: {reason}"] += 1
            return Outcome.SKIPPED
        try:
            loaded = self.source.load(session)
        except Exception as exc:  # a parser bug must not stop the other sessions
            report.failed.append((name, f"cannot parse: {type(exc).__name__}: {_short(exc)}"))
            return Outcome.FAILED
        if isinstance(loaded, NotEpisode):
            report.skipped[f"not an episode: {loaded.reason}"] += 1
            if not self.dry_run and not loaded.reason.startswith(SCOPE_REASON_PREFIX):  # rules change
                self.state.record_skip(session.main_path, sha, loaded.reason)
            return Outcome.SKIPPED
        if loaded.source_sha256 != sha:
            report.skipped["changed while reading (tried again next run)"] += 1
            return Outcome.SKIPPED
        session_id = loaded.session_id
        try:
            key = object_key(self.prefix, self.tenant, session_id)
        except InvalidArgumentError as exc:
            report.failed.append((name, str(exc)))
            return Outcome.FAILED
        if key in self._keys_this_run:  # two files claim one session (a copy): the most recent one won
            report.skipped["another file of the same session was harvested"] += 1
            return Outcome.SKIPPED
        self._keys_this_run.add(key)
        try:
            if self._already_there(key, sha):
                if not self.dry_run:
                    self.state.record(self.bucket, key, sha, session.main_path)
                report.unchanged.append(session_id)
                return Outcome.UNCHANGED
        except Exception as exc:
            return self._fail(report, session_id, exc)
        body = build_body(files, sha, self.scrubber)
        try:
            report.lines_dropped += body.dropped_lines
            report.secrets_redacted.update(body.secrets_redacted)
            if not self.dry_run:
                self._upload(body, key, session_id)
                self.state.record(self.bucket, key, sha, session.main_path)
        except Exception as exc:
            return self._fail(report, session_id, exc)
        finally:
            body.close()
        report.uploaded.append(session_id)
        report.uploaded_keys[session_id] = key
        report.uploaded_at[session_id] = self.clock()
        report.body_sha256[session_id] = body.body_sha256
        report.source_sha256[session_id] = sha
        report.bytes_uploaded += body.size
        return Outcome.UPLOADED

    def _fail(self, report: HarvestReport, session_id: str, exc: Exception) -> Outcome:
        code = aws_error_code(exc)
        report.failed.append((session_id, f"{code}: {_short(exc)}"))
        if code in _FATAL_CODES or code in ("NoCredentialsError", "NoRegionError", "ProfileNotFound"):
            report.aborted = f"{code}: {_short(exc)}"
        return Outcome.FAILED

    def _already_there(self, key: str, sha: str) -> bool:
        recorded = self.state.sha_for(self.bucket, key)
        if recorded is not None:
            return recorded == sha  # a different recorded hash: the session grew, upload it again
        if self.s3 is None or not self._head_allowed:
            return False
        try:
            head = self.s3.head_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            code = aws_error_code(exc)
            if code in ("404", "NoSuchKey", "NotFound"):
                return False
            if code in ("403", "AccessDenied", "Forbidden"):
                self._head_allowed = False  # a write-only credential: upload, the pipeline dedups by hash
                return False
            raise
        metadata = {k.lower(): v for k, v in (head.get("Metadata") or {}).items()}
        return bool(metadata.get("source-sha256") == sha)

    def _upload(self, body: Any, key: str, session_id: str) -> None:
        from boto3.s3.transfer import TransferConfig

        extra: dict[str, Any] = {
            "ContentType": "application/x-ndjson",
            "Metadata": {
                "source-sha256": body.source_sha256,
                "session-id": session_id,
                "tenant": self.tenant,
                "harvest-version": HARVEST_VERSION,
            },
        }
        # without a key id the bucket's default encryption (SSE-KMS with the stack's key) applies
        if self.kms_key_id:
            extra.update({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id})
        config = TransferConfig(
            multipart_threshold=self.multipart_threshold, multipart_chunksize=self.multipart_chunksize
        )
        self.s3.upload_fileobj(body.file, self.bucket, key, ExtraArgs=extra, Config=config)
