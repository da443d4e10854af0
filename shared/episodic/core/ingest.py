"""Write path: discover → parse+scrub → observe → distill → render → embed → store, content-hashed and
idempotent. The orchestration of one session, read top to bottom:

`begin_session` is the per-session rule every caller uses: the registered features observe the loaded
session (history, scratch: `episodic.kernel.feature_contract.SessionObserver`), then the stored card is kept (unchanged, or
a better distiller's) or the session needs a card. `ingest_one` distils and `settle`s that one session (the
AWS distill path); `index_sessions` does the same for many, newest first, distillation scheduled by
`distill_many` and cards embedded many at a time beside the parsing (`EmbedBatcher`: every core busy). The
card-writing steps themselves (rank, texts, embed, store) are `episodic.cards.write`'s.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from episodic.cards.write import (
    card_texts,
    distiller_rank,
    existing_card_verdict,
    session_opening,
    store_card,
    stored_vectors,
)
from episodic.embed.batcher import EmbedBatcher
from episodic.kernel.errors import EpisodicError, RetryableDistillError
from episodic.kernel.feature_contract import observe_quietly
from episodic.kernel.memory import Memory
from episodic.kernel.models import (
    CardRecord,
    NotEpisode,
    ParseStats,
    SessionSource,
    Trajectory,
)
from episodic.kernel.ports import Distiller, DistillResult, IngestFailure, StoredVector
from episodic.sessions.demo import retire_demo
from episodic.sessions.kept import evict_kept, keep_trajectory, load_session
from episodic.sessions.survey import render_survey

if TYPE_CHECKING:
    import numpy as np

ProgressFn = Callable[[SessionSource], None]

PARSE_ERROR = "parse error"  # a failure before any distil: the file could not be read into a session


@dataclass
class IndexReport:
    found: int = 0
    indexed: int = 0
    replaced: int = 0  # of indexed: sessions that already had a card (grown, or a better distiller)
    unchanged: int = 0
    kept_better: int = 0  # grown sessions whose better (e.g. agent-written) card was kept
    skipped: Counter[str] = field(default_factory=Counter)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session file, reason)
    stats: ParseStats = field(default_factory=ParseStats)
    source_bytes: int = 0
    agents: Counter[str] = field(default_factory=Counter)  # found sessions by the agent that wrote them
    demo_removed: int = 0  # demo cards taken out because real sessions arrived (episodic.sessions.demo)
    scope: dict[str, Any] = field(
        default_factory=dict
    )  # what the scope rules decided (episodic.sessions.scope_source)

    def count(self, outcome: SessionOutcome, path: str) -> None:
        if outcome.status == "indexed":
            self.indexed += 1
            self.replaced += outcome.replaced
        elif outcome.status == "unchanged":
            self.unchanged += 1
        elif outcome.status == "kept_better":
            self.kept_better += 1
        elif outcome.status == "failed":
            self.failed.append((path, outcome.reason))
        else:
            self.skipped[outcome.reason] += 1

    def failures_by_reason(self) -> list[tuple[str, list[str]]]:
        """(reason, sessions) for each distinct failure reason, the most frequent first."""
        grouped: dict[str, list[str]] = {}
        for session, reason in self.failed:
            grouped.setdefault(reason, []).append(session)
        return sorted(grouped.items(), key=lambda item: -len(item[1]))

    def every_distil_failed(self) -> bool:
        """Sessions needed a card and none got one (e.g. the LLM distiller is not logged in)."""
        distils = [r for _, r in self.failed if not r.startswith(PARSE_ERROR)]
        return bool(distils) and self.indexed == 0

    def as_dict(self) -> dict[str, object]:
        return {
            "found": self.found,
            "indexed": self.indexed,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "kept_better": self.kept_better,
            "skipped": dict(self.skipped),
            "failed": [{"session": s, "reason": r} for s, r in self.failed],
            "malformed_lines": self.stats.malformed_lines,
            "cut_last_lines": self.stats.truncated_files,
            "secrets_redacted": dict(self.stats.secrets_redacted),
            "source_bytes": self.source_bytes,
            "agents": dict(self.agents),
            **({"demo_removed": self.demo_removed} if self.demo_removed else {}),
            **({"scope": self.scope} if self.scope else {}),
        }


def record_failure(memory: Memory, tenant_id: str, source: SessionSource, sha: str, reason: str) -> None:
    """The one failure path: the ledger keeps the reason and the session is retried next run."""
    if memory.ledger is None:
        return
    memory.ledger.record_failure(
        IngestFailure(
            tenant_id=tenant_id,
            session_key=source.session_key,
            path=source.main_path,
            source_sha256=sha,
            reason=reason,
            last_attempt_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, RetryableDistillError):
        return f"retry next run: {exc}"
    if isinstance(exc, EpisodicError):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def survey_for(memory: Memory, trajectory: Trajectory) -> str:
    """The budgeted survey, rendered only for distillers that read it."""
    if not memory.distiller.uses_survey:
        return ""
    return render_survey(trajectory, memory.settings.survey_token_budget)


def store_distilled(
    memory: Memory,
    tenant_id: str,
    trajectory: Trajectory,
    result: DistillResult,
    vectors: list[StoredVector] | None = None,
) -> CardRecord:
    """Store the card the memory's distiller made for this session (embedded already when `vectors`)."""
    return store_card(
        memory,
        tenant_id,
        result.card,
        session_id=trajectory.session_id,
        distiller=memory.distiller.info,
        trajectory=trajectory,
        usage=result.usage,
        vectors=vectors,
    )


Status = Literal["indexed", "unchanged", "kept_better", "skipped", "failed"]


@dataclass
class SessionOutcome:
    """What happened to one session on the write path."""

    status: Status
    session_id: str | None = None
    reason: str = ""
    record: CardRecord | None = None
    replaced: bool = False  # indexed over an existing card (grown session or a better distiller)
    error: Exception | None = None  # why it failed (already recorded in the ledger)


def card_verdict(memory: Memory, trajectory: Trajectory, tenant_id: str) -> SessionOutcome | None:
    """An outcome when the stored card stays (unchanged, or a better one), else None: distill it."""
    verdict = existing_card_verdict(memory, memory.store.get(tenant_id, trajectory.session_id), trajectory)
    return None if verdict is None else SessionOutcome(verdict, trajectory.session_id)


def settle(
    memory: Memory,
    tenant_id: str,
    trajectory: Trajectory,
    distilled: DistillResult | BaseException,
    vectors: list[StoredVector] | BaseException | None = None,
) -> SessionOutcome:
    """Store a distilled card (with its `vectors` when embedded already), or record why there is none
    (retried next run, never lost)."""
    existing: CardRecord | None = None
    try:  # the store lookup too: one session's bad id must not stop the run
        existing = memory.store.get(tenant_id, trajectory.session_id)
        if existing is not None and distiller_rank(existing.distiller) > distiller_rank(
            memory.distiller.info
        ):
            # e.g. the agent wrote its own card while this one was being distilled
            return SessionOutcome("kept_better", trajectory.session_id)
        if isinstance(distilled, BaseException):
            raise distilled
        if isinstance(vectors, BaseException):
            raise vectors
        record = store_distilled(memory, tenant_id, trajectory, distilled, vectors)
    except Exception as exc:  # recorded with its reason and retried next run, never lost
        reason = failure_reason(exc)
        with contextlib.suppress(Exception):  # the ledger may refuse what the store refused
            record_failure(memory, tenant_id, trajectory.source, trajectory.source_sha256, reason)
        return SessionOutcome("failed", trajectory.session_id, reason=reason, error=exc)
    if memory.ledger is not None:
        memory.ledger.clear_failure(tenant_id, trajectory.source.session_key)
    return SessionOutcome("indexed", trajectory.session_id, record=record, replaced=existing is not None)


def begin_session(memory: Memory, tenant_id: str, loaded: Trajectory) -> SessionOutcome | None:
    """Every loaded session, whoever indexes it: its trajectory is kept and the features observe it (before
    the card: an unchanged card needs them too; never fatal), then an outcome when the stored card stays,
    else None: distill it."""
    keep_trajectory(memory, tenant_id, loaded)
    for observer in memory.observers():
        record = partial(observer.record, tenant_id, loaded)
        observe_quietly(observer, f"record of {loaded.session_id}", record, None)
    return card_verdict(memory, loaded, tenant_id)


def ingest_one(memory: Memory, tenant_id: str, loaded: Trajectory | NotEpisode) -> SessionOutcome:
    """One loaded session through the write path. A failure is recorded and returned, never raised."""
    if isinstance(loaded, NotEpisode):
        return SessionOutcome("skipped", loaded.session_id, reason=loaded.reason)
    kept = begin_session(memory, tenant_id, loaded)
    if kept is not None:
        return kept
    memory.store.ensure_manifest(memory.manifest)
    try:
        distilled: DistillResult | BaseException = memory.distiller.distill(
            loaded, survey_for(memory, loaded)
        )
    except Exception as exc:  # settled like any other failure
        distilled = exc
    return settle(memory, tenant_id, loaded, distilled)


def sweep_features(memory: Memory) -> int:
    """Once per index run (and the AWS cron): each feature expires what it no longer keeps; how many went."""
    return sum(observe_quietly(o, "sweep", o.sweep, 0) for o in memory.observers())


def index_sessions(
    memory: Memory,
    paths: Sequence[str] | None,
    tenant_id: str,
    progress: ProgressFn | None = None,
    sources: Sequence[SessionSource] | None = None,
) -> IndexReport:
    """Index every session under `paths` (default roots when None). Never raises for one bad session."""
    memory.store.ensure_manifest(memory.manifest)
    sweep_features(memory)
    report = IndexReport()
    found = list(sources) if sources is not None else list(memory.source.discover(paths))
    report.found = len(found)
    report.agents.update(source.agent for source in found)
    pending = _pending(memory, found, tenant_id, report, progress)

    def settle_one(
        trajectory: Trajectory, distilled: DistillResult | BaseException, vectors: CardVectors
    ) -> None:
        report.count(settle(memory, tenant_id, trajectory, distilled, vectors), trajectory.source.main_path)
        if progress:
            progress(trajectory.source)

    # distiller.concurrency > 1 (e.g. Claude Code): calls run in parallel; cards are embedded many at a time
    # beside the parsing (episodic.embed.batcher); stores stay in this thread
    with EmbedBatcher[Distilled](memory.embedder.embed) as batcher:
        ready: Iterable[tuple[Distilled, np.ndarray | BaseException]]
        for (trajectory, _survey), distilled in distill_many(
            memory.distiller, pending, memory.distiller.concurrency
        ):
            if isinstance(distilled, BaseException):
                settle_one(trajectory, distilled, None)
                continue
            texts = card_texts(
                memory, distilled.card, session_opening(memory, trajectory, memory.distiller.info)
            )
            ready = batcher.add((trajectory, distilled, texts), [t for _, t in texts])
            for (done, result, done_texts), matrix in ready:
                settle_one(done, result, _vectors(done_texts, matrix))
        for (done, result, done_texts), matrix in batcher.finish():
            settle_one(done, result, _vectors(done_texts, matrix))
    evict_kept(memory, tenant_id)
    if report.indexed or report.unchanged or report.kept_better:  # real sessions arrived: the demo leaves
        report.demo_removed = retire_demo(memory, tenant_id, (source.session_key for source in found))
    return report


Distilled = tuple[Trajectory, DistillResult, list[tuple[str, str]]]
CardVectors = list[StoredVector] | BaseException | None


def _vectors(texts: list[tuple[str, str]], matrix: np.ndarray | BaseException) -> CardVectors:
    """A card's stored vectors from its rows of a batch, or the batch's failure (settled as the card's)."""
    if isinstance(matrix, BaseException):
        return matrix
    try:
        return stored_vectors(texts, matrix)
    except EpisodicError as exc:
        return exc


def newest_first(found: Sequence[SessionSource]) -> list[SessionSource]:
    """The order sessions are indexed in: the most recently written first (a first index answers about
    this week's work early); files of one session key together, the largest first, so it claims the id
    (two files of different names holding one session id: the newer one's, as long as neither changes)."""
    newest: dict[str, float] = {}
    for source in found:
        newest[source.session_key] = max(newest.get(source.session_key, 0.0), source.mtime)
    return sorted(found, key=lambda s: (-newest[s.session_key], s.session_key, -s.total_bytes))


def _pending(
    memory: Memory,
    found: Sequence[SessionSource],
    tenant_id: str,
    report: IndexReport,
    progress: ProgressFn | None,
) -> Iterator[tuple[Trajectory, str]]:
    """Parse sessions lazily (in the caller's thread); yield (trajectory, survey) for those needing a card."""
    claimed: set[str] = set()  # session ids already taken this run (two files, one sessionId)
    # failures of earlier runs: one whose session now holds the card the configured distiller keeps is settled
    owed = {f.session_key for f in memory.ledger.failures(tenant_id)} if memory.ledger else set()
    for source in newest_first(found):
        report.source_bytes += source.total_bytes
        wanted: tuple[Trajectory, str] | None = None
        try:  # everything about one file (parse, the store lookup, the survey) fails for that file alone
            loaded = load_session(memory, tenant_id, source)
            report.stats.merge(loaded.stats)
            if isinstance(loaded, NotEpisode):
                report.skipped[loaded.reason] += 1
            elif loaded.session_id in claimed:  # one session, one card: the other file is skipped
                report.skipped["duplicate-session-id"] += 1
            else:
                claimed.add(loaded.session_id)
                kept = begin_session(memory, tenant_id, loaded)
                if kept is None:
                    wanted = (loaded, survey_for(memory, loaded))
                else:
                    report.count(kept, source.main_path)
                    if memory.ledger is not None and source.session_key in owed:  # not waiting for a retry
                        memory.ledger.clear_failure(tenant_id, source.session_key)
        except Exception as exc:  # the parser promises not to raise; this keeps one file from stopping a run
            reason = f"{PARSE_ERROR}: {type(exc).__name__}: {str(exc)[:300]}"
            report.failed.append((source.main_path, reason))
            with contextlib.suppress(Exception):  # the ledger may refuse what the store refused
                record_failure(memory, tenant_id, source, "", reason)
        if wanted is not None:
            yield wanted
            continue  # its progress tick comes when its card is stored
        if progress:
            progress(source)


Item = TypeVar("Item")


def distill_many(
    distiller: Distiller,
    items: Iterable[Item],
    concurrency: int,
    job: Callable[[Distiller, Item], DistillResult] | None = None,
) -> Iterator[tuple[Item, DistillResult | BaseException]]:
    """Distill items with at most `concurrency` calls in flight; yields (item, result or exception) as each
    finishes. Items are pulled lazily. `job` defaults to `distiller.distill(*item)` for (trajectory, survey)
    pairs. The caller stores results in its own thread (stores need not be thread-safe)."""
    run: Callable[[Distiller, Any], DistillResult] = job or (lambda d, item: d.distill(*item))
    if concurrency <= 1:
        for item in items:
            try:
                yield item, run(distiller, item)
            except Exception as exc:  # handed to the caller, which records it
                yield item, exc
        return
    pending: dict[Future[DistillResult], Item] = {}
    source = iter(items)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="distill") as pool:
        exhausted = False
        while True:
            while not exhausted and len(pending) < concurrency:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending[pool.submit(run, distiller, item)] = item
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                error = future.exception()
                yield item, (error if error is not None else future.result())
