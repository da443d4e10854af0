"""Hand-built weeks for the dream tests: session digests behind an in-memory `WeekSource`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from episodic.dream.source import SessionDigest, WeekSource
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome, Trajectory


def digest(
    session_id: str,
    when: str,
    *,
    problem: str = "the export command crashes on an empty transcript",
    project: str = "exporter",
    branch: str = "",
    outcome: str = "verified",
    tags: Sequence[str] = ("python",),
    files: Sequence[str] = (),
    prompts: Sequence[str] | None = None,
    decisions: Sequence[str] = (),
    insight: str = "",
    dead_ends: Sequence[str] = (),
    transcript: bool = True,
) -> SessionDigest:
    """`when` is an ISO timestamp (UTC when no offset is given)."""
    started = datetime.fromisoformat(when)
    started = started if started.tzinfo else started.replace(tzinfo=UTC)
    card = Card(
        problem=problem,
        outcome=Outcome(outcome),
        tags=list(tags),
        key_decisions=list(decisions),
        insight=insight,
        dead_ends=list(dead_ends),
    )
    record = CardRecord(
        card=card,
        session_id=session_id,
        project=project,
        git_branch=branch,
        started_at=started,
        source_sha256="0" * 64,
        source_bytes=10_000,
        distiller=DistillerInfo(kind="heuristic", model="v3"),
    )
    return SessionDigest(
        record=record,
        prompts=list(prompts if prompts is not None else [f"{problem} (from {session_id})", "go on"]),
        files_touched=list(files),
        raw_bytes=10_000,
        transcript_found=transcript,
    )


def bedrock_tool_reply(payload: dict[str, Any], tool: str = "emit") -> dict[str, Any]:
    """A Converse response whose one content block is the forced tool call (the real output shape)."""
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": tool, "input": payload}}],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 900, "outputTokens": 200, "totalTokens": 1100},
        "metrics": {"latencyMs": 700},
    }


class ListWeekSource(WeekSource):
    """Digests in memory; `deep` maps a session id to the trajectory REM may read deeply."""

    def __init__(self, digests: Sequence[SessionDigest], deep: dict[str, Trajectory] | None = None) -> None:
        self.digests = sorted(digests, key=lambda d: (d.started_at, d.session_id))
        self.deep = deep or {}
        self.deep_reads: list[str] = []

    def sessions(self, tenant_id: str, since: datetime, until: datetime) -> list[SessionDigest]:
        return [d for d in self.digests if d.started_at and since <= d.started_at < until]

    def earliest(self, tenant_id: str) -> datetime | None:
        return self.digests[0].started_at if self.digests else None

    def deep_detail(self, digest: SessionDigest) -> Trajectory | None:
        self.deep_reads.append(digest.session_id)
        return self.deep.get(digest.session_id)


def export_thread(
    prefix: str = "exp", days: Sequence[int] = (20, 21, 23, 24), outcome_last: str = "unverified"
):  # type: ignore[no-untyped-def]
    """A thread of sessions on the same files in week 2026-W30 (Monday 2026-07-20)."""
    out = []
    for n, day in enumerate(days):
        out.append(
            digest(
                f"{prefix}{n:04d}-aaaa-bbbb",
                f"2026-07-{day}T10:00:00",
                problem=f"export transcript empty state review stage part {n}",
                files=["src/export.py", "src/review.py"],
                tags=["python", "export", "review", "cli", "json", "pytest"][: 3 + n],
                outcome=outcome_last if n == len(days) - 1 else "verified",
                decisions=[f"ship the export as one pull request ({n})"],
                insight=f"the exporter re-read the file per event ({n})",
                branch="feature/export",
            )
        )
    return out
