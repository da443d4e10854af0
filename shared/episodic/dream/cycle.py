"""One dream run: for each week, survey -> extract -> score and gate -> write, counts reported per phase.

A phase that fails raises `DreamPhaseError` (the week gets no record; weeks already written stay). A week
that has a record is skipped unless `force`. The input (index, transcripts) is only read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime

from episodic.dream.card_extract import (
    card_extract,
    compared_statements,
    thread_problems,
    thread_title,
    thread_vector,
)
from episodic.dream.exemplar import Exemplar
from episodic.dream.extract import DreamPhaseError, ThreadExtract, read_deep, validate_extract
from episodic.dream.llm import (
    EXTRACT_SYSTEM,
    NARRATIVE_SYSTEM,
    Narrative,
    cards_block,
    extract_prompt,
    extract_schema,
    narrative_prompt,
    narrative_schema,
)
from episodic.dream.port import DreamArchive, DreamModel
from episodic.dream.record import Item, item_title, parse_record, render_record, section_items
from episodic.dream.scoring import PriorMemory, RecordedItem, WeekContext, explain, score_thread
from episodic.dream.source import WeekSource
from episodic.dream.statements import Meaning, prompt_sentences
from episodic.dream.survey import Survey, render_survey
from episodic.dream.synthesis import render_synthesis
from episodic.dream.threads import find_threads, pick_threads, words
from episodic.dream.weeks import IsoWeek
from episodic.dream.writer import WeekAnalysis, build_record, citation, project_of
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.models import Trajectory
from episodic.sessions.survey import render_survey as render_session_survey

DEEP_SURVEY_TOKENS = 2500


@dataclass
class WeekResult:
    week: str
    status: str  # written | replaced | kept (already recorded, no --force) | empty (no session, no record)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)
    explain: str = ""
    written: list[str] = field(default_factory=list)
    record_bytes: int = 0


@dataclass
class DreamRun:
    weeks: list[WeekResult] = field(default_factory=list)


def prior_memory(
    archive: DreamArchive, tenant_id: str, before: IsoWeek, meaning: Meaning | None = None
) -> PriorMemory:
    """The themes and unfinished threads of the records of earlier weeks (novelty, open work, patterns)."""
    prior = PriorMemory()
    for week in archive.weeks(tenant_id):
        if week >= before:
            continue
        text = archive.read(tenant_id, week)
        if not text:
            continue
        parsed = parse_record(text)
        if parsed.front.get("sessions_analysed", "1") == "0":
            continue  # an empty week's record (written by older versions) holds nothing to compare with
        prior.weeks.append(str(week))
        for key, target in (("themes", prior.themes), ("unfinished", prior.unfinished)):
            for line in section_items(parsed, key):
                target.append(RecordedItem(str(week), line, frozenset(words(_theme_terms(line)))))
    if meaning is not None:  # compared by meaning: each item's title embedded once
        meaning.prefetch([item_title(i.text) for i in [*prior.themes, *prior.unfinished]])
        for items in (prior.themes, prior.unfinished):
            vectors = meaning.vectors([item_title(i.text) for i in items])
            items[:] = [replace(i, vector=v) for i, v in zip(items, vectors, strict=True)]
    return prior


def _theme_terms(line: str) -> str:
    """A theme line's signature: its `terms ...;` list in records of older versions, else its title."""
    if "**: terms " in line:
        return line.split("**: terms ", 1)[1].split(";", 1)[0]
    return item_title(line)


def _llm_extracts(
    model: DreamModel, analysis: WeekAnalysis, survey: Survey, deep: dict[int, Trajectory]
) -> dict[int, ThreadExtract]:
    blocks = survey.text.split("\n### ")
    out = {}
    for scored in analysis.scored:
        thread = scored.thread
        shorts = [sid[:8] for sid in thread.session_ids]
        mine = "\n### ".join(b for b in blocks if any(b.startswith(f"[{s} ") for s in shorts))
        trajectory = deep.get(thread.number)
        deep_text = render_session_survey(trajectory, DEEP_SURVEY_TOKENS) if trajectory else ""
        cards = cards_block(thread.sessions)
        try:
            answer = model.complete(
                EXTRACT_SYSTEM, extract_prompt("### " + mine, deep_text, cards), extract_schema()
            )
            extract, dropped = validate_extract(answer, thread)
        except Exception as exc:
            raise DreamPhaseError(
                "extract", str(analysis.week), f"{model.id} on thread {thread.number}: {exc}"
            ) from exc
        analysis.dropped_claims += dropped
        out[thread.number] = extract
    return out


def _llm_narrative(model: DreamModel, analysis: WeekAnalysis, exemplar: Exemplar) -> list[Item]:
    promoted = [analysis.extracts[s.thread.number] for s in analysis.promoted]
    try:
        answer = model.complete(
            NARRATIVE_SYSTEM,
            narrative_prompt(exemplar.text, str(analysis.week), promoted),
            narrative_schema(),
        )
        narrative = Narrative.model_validate(answer)
    except Exception as exc:
        raise DreamPhaseError("write", str(analysis.week), f"{model.id} narrative: {exc}") from exc
    items = []
    for sentence in narrative.sentences:
        cites = [citation(d) for sid in sentence.sessions if (d := analysis.digest(sid)) is not None]
        if cites:
            items.append(Item(text=sentence.text, cites=cites))
        else:
            analysis.dropped_claims += 1
    return items


def analyse_week(
    source: WeekSource,
    tenant_id: str,
    week: IsoWeek,
    prior: PriorMemory,
    model: DreamModel | None,
    exemplar: Exemplar,
    meaning: Meaning,
) -> tuple[WeekAnalysis, dict[str, dict[str, int]]]:
    phases: dict[str, dict[str, int]] = {}
    try:
        digests = source.sessions(tenant_id, week.since, week.until)
        survey = render_survey(week, digests)
    except Exception as exc:
        raise DreamPhaseError("survey", str(week), f"{type(exc).__name__}: {exc}") from exc
    phases["survey"] = {
        "sessions": len(digests),
        "transcripts_found": sum(d.transcript_found for d in digests),
        "survey_bytes": survey.bytes,
        "raw_bytes": survey.raw_bytes,
    }
    try:
        threads, noise = find_threads(digests)
        typed = prompt_sentences([p for d in digests for p in d.prompts])
        picked = pick_threads(threads)
        meaning.prefetch([p for t in picked for p in thread_problems(t)])
        for thread in picked:  # titled from the cards' problems, not from a raw prompt; only picks are scored
            thread.label = thread_title(thread.sessions, meaning, typed)
        meaning.prefetch([t.label for t in picked])
        for thread in picked:
            thread.vector = thread_vector(thread, meaning)
        deep = read_deep(source, picked)
    except Exception as exc:
        raise DreamPhaseError("extract", str(week), f"{type(exc).__name__}: {exc}") from exc
    ctx = WeekContext(week=week, project_sessions=Counter(project_of(d) for d in digests), prior=prior)
    scored = [score_thread(t, ctx) for t in picked]
    analysis = WeekAnalysis(
        week=week,
        digests=digests,
        survey=survey,
        noise=noise,
        scored=scored,
        extracts={},
        mode="offline" if model is None else f"llm:{model.id}",
        deep_read=len(deep),
        prior=prior,
        meaning=meaning,
    )
    if model is None:
        meaning.prefetch([s for t in picked for s in compared_statements(t, typed)])
        analysis.extracts = {t.number: card_extract(t, deep.get(t.number), meaning, typed) for t in picked}
    else:
        analysis.extracts = _llm_extracts(model, analysis, survey, deep)
    phases["extract"] = {
        "candidate_threads": len(threads),
        "picked_threads": len(picked),
        "deep_extractions": len(deep),
        **{f"{k}_filtered": v for k, v in noise.counts().items()},
        "claims_dropped_uncited": analysis.dropped_claims,
    }
    phases["score"] = {"scored": len(scored), "promoted": len(analysis.promoted)}
    if model is not None and analysis.promoted:
        analysis.narrative = _llm_narrative(model, analysis, exemplar)
    return analysis, phases


def run_dream(
    source: WeekSource,
    archive: DreamArchive,
    tenant_id: str,
    weeks: list[IsoWeek],
    *,
    exemplar: Exemplar,
    now: datetime,
    model: DreamModel | None = None,
    force: bool = False,
    keep_survey: bool = False,
    meaning: Meaning | None = None,
) -> DreamRun:
    """A week without sessions gets no record (nothing to hand off; the SessionStart hook would inject an
    empty synthesis). A week already recorded is kept unless `force`; with `keep_survey` its survey is
    still written. `meaning`: the statement vectors (default: the model-free hashing embedder)."""
    meaning = meaning or Meaning(HashingEmbedder())
    run = DreamRun()
    recorded = set(archive.weeks(tenant_id))
    for week in weeks:
        if week in recorded and not force:
            kept = WeekResult(week=str(week), status="kept")
            if keep_survey:
                survey = render_survey(week, source.sessions(tenant_id, week.since, week.until))
                kept.written.append(archive.write(tenant_id, week, "survey", survey.text))
            run.weeks.append(kept)
            continue
        analysis, phases = analyse_week(
            source, tenant_id, week, prior_memory(archive, tenant_id, week, meaning), model, exemplar, meaning
        )
        if not analysis.digests:
            run.weeks.append(WeekResult(week=str(week), status="empty", phases=phases))
            continue
        try:
            record = build_record(analysis, exemplar, now)
            text = render_record(record, exemplar.headings)
            synthesis = render_synthesis(record, analysis)
        except Exception as exc:
            raise DreamPhaseError("write", str(week), f"{type(exc).__name__}: {exc}") from exc
        written = [
            archive.write(tenant_id, week, "record", text),
            archive.write(tenant_id, week, "synthesis", synthesis),
        ]
        if keep_survey:
            written.append(archive.write(tenant_id, week, "survey", analysis.survey.text))
        phases["write"] = {
            "claims": record.counters["claims"],
            "sessions_cited": len(record.sessions),
            "record_bytes": len(text.encode("utf-8")),
        }
        run.weeks.append(
            WeekResult(
                week=str(week),
                status="replaced" if week in recorded else "written",
                phases=phases,
                explain=explain(analysis.scored),
                written=written,
                record_bytes=len(text.encode("utf-8")),
            )
        )
    return run
