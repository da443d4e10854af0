"""The week's hand-off synthesis: patterns across weeks, decisions already made (not to be reopened), the
numbered flags. A pattern joins a thread of this week to a theme or unfinished thread of an earlier record
by meaning: the cosine of the thread's card vector (the mean of its cards' problem vectors) and the earlier
item's title (itself a card's problem), at the embedder's `same_thread` threshold (`statements`); without
an embedder (tests of the old records), by word overlap."""

from __future__ import annotations

from episodic.dream.card_extract import thread_vector
from episodic.dream.record import DreamRecord, item_title
from episodic.dream.scoring import RecordedItem, overlap
from episodic.dream.writer import WeekAnalysis, cites_of, ranked_extracts

PATTERN_OVERLAP = 0.2  # without an embedder: a theme "recurs" from an earlier week at this term overlap


def _best(
    analysis: WeekAnalysis, thread_number: int, items: list[RecordedItem]
) -> tuple[float, RecordedItem | None]:
    if not items:
        return 0.0, None
    scored = next(s for s in analysis.scored if s.thread.number == thread_number)
    if analysis.meaning is None:
        terms = frozenset(scored.thread.terms)
        values = [overlap(terms, i.terms) for i in items]
    else:
        vector = thread_vector(scored.thread, analysis.meaning)
        values = [float(v) for v in analysis.meaning.vectors([item_title(i.text) for i in items]) @ vector]
    best = max(range(len(items)), key=lambda n: values[n])
    return values[best], items[best]


def patterns(analysis: WeekAnalysis) -> list[str]:
    threshold = analysis.meaning.thresholds.same_thread if analysis.meaning else PATTERN_OVERLAP
    how = "similarity" if analysis.meaning else "term overlap"
    lines = []
    for scored, extract in ranked_extracts(analysis):
        for kind, items in (
            ("recurs from", analysis.prior.themes),
            ("carries over from", analysis.prior.unfinished),
        ):
            value, match = _best(analysis, scored.thread.number, items)
            if match is not None and value >= threshold:
                cites = " ".join(c.render() for c in cites_of(analysis, scored.thread.session_ids))
                lines.append(
                    f"- {extract.label} {kind} {match.week} (“{item_title(match.text)[:100]}”, "
                    f"{how} {value:.2f}) {cites}"
                )
    return lines


def render_synthesis(record: DreamRecord, analysis: WeekAnalysis) -> str:
    lines = [
        "---",
        f"week: {record.week}",
        "type: dreaming-synthesis",
        f"record: {record.week}.md",
        f"sessions_analysed: {record.sessions_analysed}",
        "---",
        "",
        "## Patterns Across Weeks",
    ]
    found = patterns(analysis)
    earlier = analysis.prior.weeks
    if not earlier:
        found = found or ["- First record: no earlier week to compare with."]
    elif not found:
        threshold = analysis.meaning.thresholds.same_thread if analysis.meaning else PATTERN_OVERLAP
        found = [
            f"- No thread of this week matches a theme or unfinished thread of the {len(earlier)} earlier "
            f"record(s) ({earlier[0]} to {earlier[-1]}; joined at similarity {threshold:.2f})."
        ]
    lines += found
    lines += ["", "## Decisions Already Made (do not reopen)"]
    lines += [i.render() for i in record.sections.get("decisions", [])] or [
        f"- None this week: {record.empty_reasons.get('decisions', 'no decision was recorded.')}"
    ]
    lines += ["", "## Flags for Review"]
    lines += [i.render(n) for n, i in enumerate(record.sections.get("flags", []), 1)] or [
        f"- None this week: {record.empty_reasons.get('flags', 'nothing is flagged.')}"
    ]
    return "\n".join(lines) + "\n"
