"""`episodic backfill --limit N`: estimate, confirm, harvest the N most recent sessions, wait for their cards.

A card is indexed when the distill Lambda has archived it at `cards/<tenant>/<session>.json` with the
hash of the uploaded body in its `source-sha256` metadata (`episodic.aws.card_archive`); a failure is a
marker `failures/<tenant>/<session>.json` with a `reason` (`episodic.aws.pipeline.S3FailureLedger`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from episodic.harvest.harvest import HarvestReport, aws_error_code
from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.kernel.ports import TranscriptSource
from episodic.sessions.backfill_estimate import InspectReport, inspect_history

DEFAULT_CARDS_PREFIX = "cards/"
DEFAULT_FAILURES_PREFIX = "failures/"


class SelectedSource(TranscriptSource):
    """A source that discovers only the given sessions (so `inspect` runs on exactly the backfill sample)."""

    def __init__(self, inner: TranscriptSource, sessions: Sequence[SessionSource]) -> None:
        self.inner = inner
        self.sessions = list(sessions)

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        yield from self.sessions

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        return self.inner.load(source)


def estimate_backfill(
    source: TranscriptSource,
    sessions: Sequence[SessionSource],
    *,
    token_budget: int,
    model_id: str,
    progress: Callable[[SessionSource], None] | None = None,
) -> InspectReport:
    return inspect_history(
        SelectedSource(source, sessions),
        None,
        token_budget=token_budget,
        model_id=model_id,
        progress=progress,
    )


@dataclass
class CardWait:
    indexed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session, reason from the pipeline)
    pending: list[str] = field(default_factory=list)  # not indexed within the timeout
    waited_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "indexed": list(self.indexed),
            "failed": [{"session": s, "reason": r} for s, r in self.failed],
            "not_indexed_within_timeout": list(self.pending),
            "waited_seconds": round(self.waited_seconds, 1),
        }


def expected_cards(report: HarvestReport) -> dict[str, frozenset[str] | None]:
    """session id -> the card hashes that count as current (None: any card, for sessions not re-uploaded)."""
    expected: dict[str, frozenset[str] | None] = {sid: None for sid in report.unchanged}
    for sid in report.uploaded:
        hashes = {report.body_sha256.get(sid), report.source_sha256.get(sid)}
        expected[sid] = frozenset(h for h in hashes if h)
    return expected


def wait_for_cards(
    s3_client: Any,
    bucket: str,
    tenant: str,
    expected: Mapping[str, frozenset[str] | None],
    *,
    cards_prefix: str = DEFAULT_CARDS_PREFIX,
    failures_prefix: str = DEFAULT_FAILURES_PREFIX,
    timeout_seconds: float = 900.0,
    poll_seconds: float = 15.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_poll: Callable[[CardWait], None] | None = None,
) -> CardWait:
    """Poll the card archive until every expected session has a current card or a failure marker."""
    result = CardWait()
    pending = dict(expected)
    start = clock()
    while True:
        for session_id, hashes in list(pending.items()):
            card_sha = _head_sha(s3_client, bucket, f"{cards_prefix}{tenant}/{session_id}.json")
            if card_sha is not None and (hashes is None or card_sha in hashes or card_sha == ""):
                result.indexed.append(session_id)
                del pending[session_id]
                continue
            reason = _failure_reason(
                s3_client, bucket, f"{failures_prefix}{tenant}/{session_id}.json", hashes
            )
            if reason is not None:
                result.failed.append((session_id, reason))
                del pending[session_id]
        result.waited_seconds = clock() - start
        result.pending = sorted(pending)
        if on_poll:
            on_poll(result)
        if not pending or result.waited_seconds >= timeout_seconds:
            return result
        sleep(min(poll_seconds, max(timeout_seconds - result.waited_seconds, 0.0)))


def _head_sha(s3_client: Any, bucket: str, key: str) -> str | None:
    """The object's source-sha256 metadata ("" when it has none); None when the object does not exist."""
    try:
        head = s3_client.head_object(Bucket=bucket, Key=key)
    except Exception as exc:
        if aws_error_code(exc) in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
    metadata = {k.lower(): v for k, v in (head.get("Metadata") or {}).items()}
    return str(metadata.get("source-sha256", ""))


def _failure_reason(s3_client: Any, bucket: str, key: str, hashes: frozenset[str] | None) -> str | None:
    try:
        body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except Exception as exc:
        if aws_error_code(exc) in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "the pipeline recorded a failure (unreadable marker)"
    if not isinstance(data, dict):
        return "the pipeline recorded a failure (unreadable marker)"
    marker_sha = data.get("source_sha256")
    if hashes and marker_sha and marker_sha not in hashes:
        return None  # a failure of an older version of the session: this upload may still succeed
    return str(data.get("reason") or "the pipeline recorded a failure without a reason")
