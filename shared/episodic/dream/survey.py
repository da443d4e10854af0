"""Light sleep: the week as a compact markdown outline, close enough to the transcripts to cite.

Per session, verbatim (scrubbed, each prompt cut to a few hundred characters): its id and date, project,
card problem and outcome, every prompt, the files touched, the subagents and the closing summary. Its
size is reported against the raw transcript bytes it stands for. Regenerable, so not kept unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from episodic.dream.source import SessionDigest
from episodic.dream.statements import project_name
from episodic.dream.weeks import IsoWeek

MAX_FILES = 15


def cite(digest: SessionDigest) -> str:
    """The citation every claim carries: the session's short id and its day."""
    day = digest.started_at.date().isoformat() if digest.started_at else "undated"
    return f"[{short_id(digest.session_id)} {day}]"


def short_id(session_id: str) -> str:
    return session_id[:8]


@dataclass(frozen=True)
class Survey:
    week: IsoWeek
    text: str
    sessions: int
    raw_bytes: int

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.bytes if self.bytes else 0.0


def _session_block(digest: SessionDigest) -> list[str]:
    record = digest.record
    card = record.card
    out = [
        f"### {cite(digest)} {project_name(record.cwd, record.project)} · {record.agent} · {card.outcome.value}",
        f"- session: {record.session_id}" + (f" · branch {record.git_branch}" if record.git_branch else ""),
        f"- problem (card): {card.problem}",
    ]
    if digest.titles:
        out.append("- titles: " + " | ".join(digest.titles))
    if card.tags:
        out.append("- tags: " + ", ".join(card.tags))
    if not digest.transcript_found:
        out.append("- transcript: not found (card only)")
    if digest.prompts:
        out.append(f"- prompts ({len(digest.prompts)}):")
        out += [f"  {i}. {p}" for i, p in enumerate(digest.prompts, 1)]
    if digest.files_touched:
        more = len(digest.files_touched) - MAX_FILES
        files = ", ".join(digest.files_touched[:MAX_FILES]) + (f" (+{more} more)" if more > 0 else "")
        out.append(f"- files: {files}")
    if digest.subagents:
        out.append(f"- subagents: {len(digest.subagents)}")
    if digest.closing_summary:
        out.append(f"- closing summary: {digest.closing_summary}")
    return out


def render_survey(week: IsoWeek, digests: list[SessionDigest]) -> Survey:
    raw = sum(d.raw_bytes for d in digests)
    lines = [
        f"# Survey {week} ({week.period})",
        f"{len(digests)} sessions, {raw:,} transcript bytes.",
        "",
    ]
    for digest in digests:
        lines += [*_session_block(digest), ""]
    return Survey(week=week, text="\n".join(lines).rstrip() + "\n", sessions=len(digests), raw_bytes=raw)
