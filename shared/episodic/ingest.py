"""Write path: discover → parse+scrub → distill → render → embed → store, content-hashed and idempotent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from episodic.distill.claude_code import distill_many
from episodic.errors import EpisodicError, RetryableDistillError
from episodic.models import (
    DEFAULT_AGENT,
    Card,
    CardRecord,
    DistillerInfo,
    DistillUsage,
    NotEpisode,
    ParseStats,
    SessionSource,
    Trajectory,
)
from episodic.ports import DistillResult, IngestFailure, StoredVector
from episodic.render import render
from episodic.service import Memory
from episodic.survey import render_survey

ProgressFn = Callable[[SessionSource], None]

# a card from a better distiller is never replaced by a worse one for the same session
DISTILLER_RANK = {"heuristic": 0, "bedrock": 2, "claude-code": 2, "import": 2, "self": 3}


def distiller_rank(info: DistillerInfo) -> int:
    return DISTILLER_RANK.get(info.kind, 1)


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
            "secrets_redacted": dict(self.stats.secrets_redacted),
            "source_bytes": self.source_bytes,
            "agents": dict(self.agents),
        }


def _vectors_for(memory: Memory, card: Card) -> list[StoredVector]:
    renderings = list(memory.settings.renderings)
    texts = [render(card, r) for r in renderings]
    matrix = memory.embedder.embed(texts)
    return [
        StoredVector(rendering=r, text=t, vector=matrix[i])
        for i, (r, t) in enumerate(zip(renderings, texts, strict=True))
    ]


def store_card(
    memory: Memory,
    tenant_id: str,
    card: Card,
    *,
    session_id: str,
    distiller: DistillerInfo,
    trajectory: Trajectory | None = None,
    usage: DistillUsage | None = None,
    source_sha256: str | None = None,
) -> CardRecord:
    """Embed the card's renderings and replace the session's card (one session, one card)."""
    record = CardRecord(
        card=card,
        session_id=session_id,
        tenant_id=tenant_id,
        project=trajectory.project if trajectory else "",
        agent=trajectory.agent if trajectory else DEFAULT_AGENT,
        cwd=trajectory.cwd if trajectory else "",
        git_branch=trajectory.git_branch if trajectory else "",
        started_at=trajectory.started_at if trajectory else None,
        ended_at=trajectory.ended_at if trajectory else None,
        source_sha256=source_sha256 or (trajectory.source_sha256 if trajectory else ""),
        source_bytes=trajectory.source.total_bytes if trajectory else 0,
        distiller=distiller,
        usage=usage or DistillUsage(),
        indexed_at=datetime.now(UTC),
    )
    memory.store.upsert(record, _vectors_for(memory, card), memory.manifest)
    return record


def _record_failure(memory: Memory, tenant_id: str, source: SessionSource, sha: str, reason: str) -> None:
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


def survey_for(memory: Memory, trajectory: Trajectory) -> str:
    """The budgeted survey, rendered only for distillers that read it."""
    if not memory.distiller.uses_survey:
        return ""
    return render_survey(trajectory, memory.settings.survey_token_budget)


def ingest_trajectory(memory: Memory, trajectory: Trajectory, tenant_id: str) -> CardRecord:
    """Distill one parsed session and store its card; raises EpisodicError when it cannot."""
    result = memory.distiller.distill(trajectory, survey_for(memory, trajectory))
    return store_distilled(memory, tenant_id, trajectory, result)


def store_distilled(
    memory: Memory, tenant_id: str, trajectory: Trajectory, result: DistillResult
) -> CardRecord:
    """Store the card the memory's distiller made for this session."""
    return store_card(
        memory,
        tenant_id,
        result.card,
        session_id=trajectory.session_id,
        distiller=memory.distiller.info,
        trajectory=trajectory,
        usage=result.usage,
    )


def existing_card_verdict(
    memory: Memory, existing: CardRecord | None, trajectory: Trajectory
) -> Literal["unchanged", "kept_better"] | None:
    """'unchanged' / 'kept_better' when no new card is needed, else None."""
    if existing is None:
        return None
    current = memory.distiller.info
    # content hash + distiller id: a new distiller (or version) of equal or higher rank re-distills
    same_distiller = existing.distiller.id == current.id
    if existing.source_sha256 == trajectory.source_sha256 and (
        same_distiller or distiller_rank(existing.distiller) > distiller_rank(current)
    ):
        return "unchanged"
    if distiller_rank(existing.distiller) > distiller_rank(current):
        return "kept_better"
    return None


def index_sessions(
    memory: Memory,
    paths: Sequence[str] | None,
    tenant_id: str,
    progress: ProgressFn | None = None,
    sources: Sequence[SessionSource] | None = None,
) -> IndexReport:
    """Index every session under `paths` (default roots when None). Never raises for one bad session."""
    memory.store.ensure_manifest(memory.manifest)
    report = IndexReport()
    found = list(sources) if sources is not None else list(memory.source.discover(paths))
    report.found = len(found)
    report.agents.update(source.agent for source in found)
    pending = _pending(memory, found, tenant_id, report, progress)
    # distiller.concurrency > 1 (e.g. Claude Code): calls run in parallel; stores stay in this thread
    for (trajectory, _survey), outcome in distill_many(
        memory.distiller, pending, memory.distiller.concurrency
    ):
        _store_outcome(memory, trajectory, tenant_id, report, outcome)
        if progress:
            progress(trajectory.source)
    return report


def _needs_card(memory: Memory, trajectory: Trajectory, tenant_id: str, report: IndexReport) -> bool:
    verdict = existing_card_verdict(memory, memory.store.get(tenant_id, trajectory.session_id), trajectory)
    if verdict == "unchanged":
        report.unchanged += 1
    elif verdict == "kept_better":
        report.kept_better += 1
    return verdict is None


def _store_outcome(
    memory: Memory,
    trajectory: Trajectory,
    tenant_id: str,
    report: IndexReport,
    outcome: DistillResult | BaseException,
) -> None:
    """Store a distilled card, or record why there is none (retried next run, never lost)."""
    existing = memory.store.get(tenant_id, trajectory.session_id)
    if existing is not None and distiller_rank(existing.distiller) > distiller_rank(memory.distiller.info):
        report.kept_better += 1  # e.g. the agent wrote its own card while this one was being distilled
        return
    try:
        if isinstance(outcome, BaseException):
            raise outcome
        store_distilled(memory, tenant_id, trajectory, outcome)
    except RetryableDistillError as exc:
        reason = f"retry next run: {exc}"
        report.failed.append((trajectory.source.main_path, reason))
        _record_failure(memory, tenant_id, trajectory.source, trajectory.source_sha256, reason)
        return
    except Exception as exc:  # recorded with its reason and retried next run, never lost
        reason = (
            str(exc) if isinstance(exc, EpisodicError) else f"internal error: {type(exc).__name__}: {exc}"
        )
        report.failed.append((trajectory.source.main_path, reason))
        _record_failure(memory, tenant_id, trajectory.source, trajectory.source_sha256, reason)
        return
    report.indexed += 1
    if existing is not None:
        report.replaced += 1
    if memory.ledger is not None:
        memory.ledger.clear_failure(tenant_id, trajectory.source.session_key)


def _pending(
    memory: Memory,
    found: Sequence[SessionSource],
    tenant_id: str,
    report: IndexReport,
    progress: ProgressFn | None,
) -> Iterator[tuple[Trajectory, str]]:
    """Parse sessions lazily (in the caller's thread); yield (trajectory, survey) for those needing a card."""
    for source in found:
        report.source_bytes += source.total_bytes
        try:
            loaded = memory.source.load(source)
        except Exception as exc:  # the parser promises not to raise; this keeps one file from stopping a run
            report.failed.append((source.main_path, f"parse error: {exc}"))
            _record_failure(memory, tenant_id, source, "", f"parse error: {exc}")
        else:
            report.stats.merge(loaded.stats)
            if isinstance(loaded, NotEpisode):
                report.skipped[loaded.reason] += 1
            elif _needs_card(memory, loaded, tenant_id, report):
                yield loaded, survey_for(memory, loaded)
                continue  # its progress tick comes when its card is stored
        if progress:
            progress(source)
