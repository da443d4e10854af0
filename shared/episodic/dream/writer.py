"""Write: the promoted threads' extracts become the record's fixed sections, and the week's hand-off
synthesis (patterns across weeks, decisions already made, numbered flags). Every item cites sessions."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from episodic.dream.exemplar import Exemplar
from episodic.dream.extract import ThreadExtract
from episodic.dream.record import Citation, DreamRecord, Item
from episodic.dream.scoring import PriorMemory, Scored
from episodic.dream.source import SessionDigest
from episodic.dream.statements import Meaning, first_sentence, project_name
from episodic.dream.survey import Survey
from episodic.dream.threads import Noise
from episodic.dream.weeks import IsoWeek
from episodic.kernel.models import Outcome

NEAR_MISS = 0.6  # a recurring thread held back with a score this high is flagged
MAX_NARRATIVE_THREADS = 3


@dataclass
class WeekAnalysis:
    """Everything the three phases found for one week (the writer's input)."""

    week: IsoWeek
    digests: list[SessionDigest]
    survey: Survey
    noise: Noise
    scored: list[Scored]
    extracts: dict[int, ThreadExtract]
    mode: str
    deep_read: int = 0
    dropped_claims: int = 0
    narrative: list[Item] | None = None  # the LLM's; None: written offline
    prior: PriorMemory = field(default_factory=PriorMemory)
    meaning: Meaning | None = None  # statement vectors: duplicates dropped, threads joined across weeks

    @property
    def promoted(self) -> list[Scored]:
        return [s for s in self.scored if s.promoted]

    def digest(self, session_id: str) -> SessionDigest | None:
        return next((d for d in self.digests if d.session_id == session_id), None)


def citation(digest: SessionDigest) -> Citation:
    day = digest.started_at.date().isoformat() if digest.started_at else "undated"
    return Citation(session_id=digest.session_id, day=day)


def cites_of(analysis: WeekAnalysis, session_ids: list[str]) -> list[Citation]:
    out = []
    for sid in dict.fromkeys(session_ids):
        digest = analysis.digest(sid)
        if digest is not None:
            out.append(citation(digest))
    return out


def _outcomes(digests: list[SessionDigest]) -> str:
    counts = Counter(d.record.card.outcome.value for d in digests)
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _quoted(text: str) -> str:
    return f"“{text.rstrip('.').strip()}”"


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _days(scored: Scored) -> str:
    days = {d.started_at.date() for d in scored.thread.sessions if d.started_at}
    return f"{len(scored.thread.sessions)} sessions" + (f" over {len(days)} days" if len(days) > 1 else "")


def offline_narrative(analysis: WeekAnalysis, decisions: list[Item], unfinished: list[Item]) -> list[Item]:
    """What the week was about, in sentences: its threads, what was decided, what is left open (the counts
    are in the statistics appendix)."""
    if not analysis.digests:
        return [Item(text="No session was indexed for this week.")]
    centred = analysis.promoted[:MAX_NARRATIVE_THREADS]
    recurring = [s for s in analysis.scored if len(s.thread.sessions) >= 2 and not s.promoted]
    if centred:
        parts = [f"{_quoted(s.thread.label)} ({_days(s)})" for s in centred]
        text = f"The week's work was about {_joined(parts)}."
        about = centred
    elif recurring:
        about = sorted(recurring, key=lambda s: -s.score)[:MAX_NARRATIVE_THREADS]
        text = (
            "No thread stood out enough to become a theme; the work that came back most was "
            + _joined([f"{_quoted(s.thread.label)} ({_days(s)})" for s in about])
            + "."
        )
    else:
        about = sorted(analysis.scored, key=lambda s: -len(s.thread.sessions[0].prompts))[:2]
        titles = _joined([_quoted(s.thread.label) for s in about]) if about else "none"
        text = f"The week was one-off tasks, none taken up again; the largest were {titles}."
    items = [
        Item(text=text, cites=cites_of(analysis, [sid for s in about for sid in s.thread.session_ids][:6]))
    ]
    if decisions:
        mine = {sid for s in about for sid in s.thread.session_ids}  # the named threads' decisions first
        picked = sorted(decisions, key=lambda d: not any(c.session_id in mine for c in d.cites))[:2]
        said = _joined([_quoted(first_sentence(d.text, 140)) for d in picked])
        more = f" ({len(decisions) - 2} more below)" if len(decisions) > 2 else ""
        items.append(
            Item(
                text=f"Decided along the way: {said}{more}.",
                cites=[c for d in picked for c in d.cites],
            )
        )
    else:
        items.append(
            Item(text="No key decision was recorded in the week's threads.", cites=items[0].cites[:1])
        )
    if unfinished:
        open_titles = [_quoted(u.text.split(": its last session", 1)[0]) for u in unfinished[:3]]
        items.append(
            Item(
                text=f"Left open at the week's end: {_joined(open_titles)}; no passing check ran after "
                f"{'its' if len(open_titles) == 1 else 'their'} last change.",
                cites=[u.cites[-1] for u in unfinished[:3] if u.cites],
            )
        )
    elif analysis.extracts:
        items.append(
            Item(
                text="Nothing was left open: the latest session of each thread ended verified or informational.",
                cites=items[0].cites[-1:],
            )
        )
    return items


def week_statistics(analysis: WeekAnalysis) -> list[Item]:
    """The week in numbers (the appendix): sessions, projects and outcomes, the gates, the noise."""
    digests = analysis.digests
    if not digests:
        return []
    projects = Counter(project_of(d) for d in digests)
    top = ", ".join(f"{p} ({n})" for p, n in projects.most_common(3))
    recurring = [s for s in analysis.scored if len(s.thread.sessions) >= 2]
    items = [
        Item(
            text=f"{len(digests)} sessions across {len(projects)} project(s), mostly {top}; "
            f"outcomes: {_outcomes(digests)}.",
            cites=[citation(digests[0]), citation(digests[-1])],
        ),
        Item(
            text=f"{len(analysis.promoted)} of {len(analysis.scored)} candidate threads "
            f"({len(recurring)} recurring) passed all three gates.",
            cites=cites_of(analysis, [s.thread.session_ids[0] for s in analysis.scored][:6]),
        ),
    ]
    noise = [*analysis.noise.retries, *analysis.noise.loop_ticks, *analysis.noise.chatter]
    if noise:
        items.append(
            Item(
                text=f"{len(noise)} session(s) were set aside as retries, loop ticks or one-off chatter.",
                cites=[citation(d) for d in noise[:6]],
            )
        )
    return items


def ranked_extracts(analysis: WeekAnalysis) -> list[tuple[Scored, ThreadExtract]]:
    """REM's threads, the promoted first (by score), then the others it read: the week's significant work."""
    ranked = sorted(analysis.scored, key=lambda s: (not s.promoted, -s.score))
    return [(s, analysis.extracts[s.thread.number]) for s in ranked if s.thread.number in analysis.extracts]


def _distinct(analysis: WeekAnalysis, items: list[Item]) -> list[Item]:
    """Items that say the same thing as an earlier one (by meaning) dropped: the first, best-ranked, stays."""
    if analysis.meaning is None:
        return items
    return [items[i] for i in analysis.meaning.distinct([i.text for i in items])]


def _decisions(analysis: WeekAnalysis, cap: int) -> list[Item]:
    """Taken in turn from each thread (the best-ranked first), so one busy thread does not fill the section."""
    per_thread: list[list[Item]] = []
    for _, extract in ranked_extracts(analysis):
        mine = []
        for claim in extract.decisions:
            cites = cites_of(analysis, claim.sessions)
            if cites:
                mine.append(Item(text=claim.text, cites=cites, day=cites[0].day))
        per_thread.append(mine)
    items = [i for turn in itertools.zip_longest(*per_thread) for i in turn if i is not None]
    kept = _distinct(analysis, items)[:cap]
    kept.sort(key=lambda i: i.day or "")
    return kept


def _unfinished(analysis: WeekAnalysis, cap: int) -> list[Item]:
    items = []
    for _, extract in ranked_extracts(analysis):
        for claim in extract.unfinished:
            cost = f" Carry-over: {claim.carry_over_cost}." if claim.carry_over_cost else ""
            text = claim.text if claim.text.startswith(extract.label) else f"{extract.label}: {claim.text}"
            items.append(Item(text=f"{text.rstrip('.')}.{cost}", cites=cites_of(analysis, claim.sessions)))
    return items[:cap]


def _insights(analysis: WeekAnalysis, cap: int) -> tuple[list[Item], int, int]:
    verified: list[Item] = []
    marked: list[Item] = []
    for _, extract in ranked_extracts(analysis):
        for claim in extract.insights:
            cites = cites_of(analysis, claim.sessions)
            if claim.verified:
                verified.append(Item(text=claim.text, cites=cites))
            else:
                marked.append(Item(text=f"(unverified) {claim.text}", cites=cites))
    items = _distinct(analysis, verified + marked)[:cap]
    shown_verified = sum(1 for i in items if not i.text.startswith("(unverified)"))
    return items, shown_verified, len(items) - shown_verified


def project_of(digest: SessionDigest) -> str:
    return project_name(digest.record.cwd, digest.record.project)


def _projects(analysis: WeekAnalysis, cap: int) -> list[Item]:
    by_project: dict[str, list[SessionDigest]] = {}
    for digest in analysis.digests:
        by_project.setdefault(project_of(digest), []).append(digest)
    items = []
    for project, digests in sorted(by_project.items(), key=lambda kv: -len(kv[1]))[:cap]:
        files = len({f for d in digests for f in d.files_touched})
        items.append(
            Item(
                text=f"{project}: {len(digests)} sessions ({_outcomes(digests)}), {files} files touched.",
                cites=[citation(d) for d in digests],
            )
        )
    return items


def _risks(analysis: WeekAnalysis, cap: int) -> list[Item]:
    items = []
    cited: set[str] = set()
    for _, extract in ranked_extracts(analysis):
        for claim in extract.risks:
            items.append(Item(text=claim.text, cites=cites_of(analysis, claim.sessions)))
            cited.update(claim.sessions)
    failed = [
        d for d in analysis.digests if d.record.card.outcome is Outcome.FAILED and d.session_id not in cited
    ]
    for digest in failed:
        title = first_sentence(digest.record.card.problem, 120)
        items.append(
            Item(text=f"Ended failed, not picked up again this week: {title}", cites=[citation(digest)])
        )
    unique = {i.text: i for i in reversed(items)}  # exact repeats only: risks share a template, not a meaning
    return [i for i in items if unique.get(i.text) is i][:cap]


EMPTY_REASONS: dict[str, str] = {
    "themes": "no thread passed all three gates ({candidates} candidates, {recurring} recurring; "
    "`dream --explain` shows each one's signals).",
    "decisions": "no card of the week's {picked} threads records a key decision, and no sentence of their "
    "transcripts about the thread's topic states one.",
    "unfinished": "the latest session of each of the week's {picked} threads ended verified or informational.",
    "insights": "no card of the week's {picked} threads states an insight or a misleading intuition that "
    "reads as a statement.",
    "risks": "no dead end recurred, no failed session was left, and no unverified change was touched again.",
    "flags": "nothing is open, nothing recurred just under the gates, and every session had its transcript.",
    "narrative": "no session was indexed for this week.",
    "projects": "no session was indexed for this week.",
}


def empty_reasons(analysis: WeekAnalysis, sections: dict[str, list[Item]]) -> dict[str, str]:
    """Why each empty section is empty (a week without sessions says only that)."""
    if not analysis.digests:
        return {key: "no session was indexed for this week." for key, items in sections.items() if not items}
    facts = {
        "candidates": len(analysis.scored),
        "recurring": sum(len(s.thread.sessions) >= 2 for s in analysis.scored),
        "picked": len(analysis.extracts),
    }
    return {key: EMPTY_REASONS[key].format(**facts) for key, items in sections.items() if not items}


def _flags(analysis: WeekAnalysis, unfinished: list[Item], cap: int) -> list[Item]:
    items = [
        Item(text=f"Decide how to close: {u.text.split('. Carry-over')[0]}", cites=u.cites)
        for u in unfinished
    ]
    for scored in analysis.scored:
        if scored.promoted or len(scored.thread.sessions) < 2 or scored.score < NEAR_MISS:
            continue
        failed = ", ".join(g.name for g in scored.gates if not g.passed)
        items.append(
            Item(
                text=f"Recurred but held back by the {failed} gate: {scored.thread.label}",
                cites=cites_of(analysis, scored.thread.session_ids),
                score=scored.score,
            )
        )
    missing = [d for d in analysis.digests if not d.transcript_found]
    if missing:
        items.append(
            Item(
                text=f"{len(missing)} session(s) had a card but no transcript here: their prompts are not surveyed.",
                cites=[citation(d) for d in missing[:6]],
            )
        )
    return items[:cap]


def build_record(analysis: WeekAnalysis, exemplar: Exemplar, now: datetime) -> DreamRecord:
    themes = [
        Item(
            text=f"**{s.thread.label}**: {analysis.extracts[s.thread.number].summary}"
            if s.thread.number in analysis.extracts
            else f"**{s.thread.label}**: {len(s.thread.sessions)} sessions",
            cites=cites_of(analysis, s.thread.session_ids),
            score=s.score,
        )
        for s in analysis.promoted[: exemplar.cap("themes")]
    ]
    unfinished = _unfinished(analysis, exemplar.cap("unfinished"))
    insights, verified, marked = _insights(analysis, exemplar.cap("insights"))
    decisions = _decisions(analysis, exemplar.cap("decisions"))
    sections = {
        "narrative": analysis.narrative or offline_narrative(analysis, decisions, unfinished),
        "themes": themes,
        "decisions": decisions,
        "unfinished": unfinished,
        "insights": insights,
        "projects": _projects(analysis, exemplar.cap("projects")),
        "risks": _risks(analysis, exemplar.cap("risks")),
        "flags": _flags(analysis, unfinished, exemplar.cap("flags")),
    }
    reasons = empty_reasons(analysis, sections)
    statistics = week_statistics(analysis)
    cited = {c.session_id for items in [*sections.values(), statistics] for i in items for c in i.cites}
    claims = [i for items in sections.values() for i in items]
    starts = [d.started_at for d in analysis.digests if d.started_at]
    newest = max(starts) if starts else None
    counters = {
        "sessions_analysed": len(analysis.digests),
        "transcripts_found": sum(d.transcript_found for d in analysis.digests),
        "survey_bytes": analysis.survey.bytes,
        "raw_bytes": analysis.survey.raw_bytes,
        "candidate_threads": len(analysis.scored),
        "recurring_candidates": sum(len(s.thread.sessions) >= 2 for s in analysis.scored),
        "promoted_threads": len(analysis.promoted),
        "deep_extractions": analysis.deep_read,
        "retries_filtered": len(analysis.noise.retries),
        "loop_ticks_filtered": len(analysis.noise.loop_ticks),
        "chatter_filtered": len(analysis.noise.chatter),
        "claims": len(claims),
        "claims_without_citation": sum(1 for i in claims if not i.cites and i.text),
        "claims_dropped_uncited": analysis.dropped_claims,
        "insights_verified": verified,
        "insights_marked_unverified": marked,
        "input_age_days": (now - newest).days if newest else -1,
    }
    return DreamRecord(
        week=str(analysis.week),
        period=analysis.week.period,
        sessions_analysed=len(analysis.digests),
        mode=analysis.mode,
        generated_at=now.isoformat(timespec="seconds"),
        input_range=f"{analysis.week.since.isoformat()} to {analysis.week.until.isoformat()} (exclusive)",
        newest_session=newest.isoformat(timespec="minutes") if newest else None,
        survey_bytes=analysis.survey.bytes,
        raw_bytes=analysis.survey.raw_bytes,
        sections=sections,
        statistics=statistics,
        counters=counters,
        sessions={sid[:8]: sid for sid in sorted(cited)},
        empty_reasons=reasons,
    )
