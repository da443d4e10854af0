"""One presentation module: how a card becomes text for an agent (search results, get_episode, the CLI).

Stdlib-only at import. The prompt hook keeps its own stdlib copy of `cut` and `fit_lines` (it may import
nothing of the core); tests/unit/hooks/test_hook.py pins the copies to these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.kernel.models import CardRecord


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def fit_lines(lines: Iterable[str], budget: int, min_room: int) -> list[str]:
    """Lines in order, the last one cut to fit `budget` characters (newlines counted); stops when fewer
    than `min_room` characters are left for a line."""
    out: list[str] = []
    for line in lines:
        remaining = budget - sum(len(x) + 1 for x in out)
        if remaining <= min_room:
            break
        out.append(cut(line, remaining - 1))
    return out


POINTER_CHARS = 120  # what a pointer says of its session: about one sentence
POINTER_ID_CHARS = 8  # get_episode takes a unique prefix of a session id, as git takes a short hash
WEAK_HEADER = "Possibly related past sessions (get_episode ID gives the card):"
_SENTENCE_END = (". ", "? ", "! ", "\n")


def counted(count: int, noun: str) -> str:
    """ "1 session", "2 sessions": a count with its noun, plural unless one (nouns that take an -s)."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def first_sentence(text: str, limit: int = POINTER_CHARS) -> str:
    """The first sentence of `text` on one line, at most `limit` characters, cut at a word with an ellipsis."""
    text = text.strip()
    ends = [i for i in (text.find(mark) for mark in _SENTENCE_END) if i > 0]
    sentence = " ".join(text[: min(ends) + 1].split()) if ends else " ".join(text.split())
    if len(sentence) <= limit:
        return sentence
    room = sentence[: max(limit - 1, 0)]
    word = room.rsplit(" ", 1)[0] if " " in room[limit // 2 :] else room
    return word.rstrip(" ,;:-") + "…"


TITLE_WORDS = 5  # a first sentence this short is a title ("Fix CI lint."): the next one names the matter


def pointer_problem(problem: str, limit: int = POINTER_CHARS) -> str:
    """What a pointer says of its session: the problem's first sentence, and the next one too when the
    first is only a title (a question, however short, is the problem itself)."""
    first = first_sentence(problem, limit)
    rest = problem.strip()[len(first) :] if problem.strip().startswith(first) else ""
    if len(first.split()) > TITLE_WORDS or not rest.strip() or first.endswith(("…", "?")):
        return first
    room = limit - len(first) - 1
    return f"{first} {first_sentence(rest, room)}" if room > 20 else first


def entry_label(tier: str, outcome: str) -> str:
    """How an entry is marked for the agent: its tier, and its outcome when not verified ("weak, unverified")."""
    return tier if outcome == "verified" else f"{tier}, {outcome}"


def pointer_line(session_id: str, date: str | None, problem: str, label: str | None = None) -> str:
    """A hit as one line: date, short session id, its label, what the session was about (one sentence)."""
    tag = f"[{label}] " if label else ""
    return f"- {date or 'undated'} {session_id[:POINTER_ID_CHARS]} {tag}{pointer_problem(problem)}"


# How a card's fields are introduced. An offline (heuristic) card holds sentences lifted from the session: it
# says so ("The session concluded: …") instead of presenting them as distilled lessons ("Insight: …").
LESSON_TITLES = {
    "problem": "Problem",
    "insight": "Insight",
    "dead_ends": "Dead ends",
    "misleading_intuitions": "Misleading intuitions",
    "critical_checks": "Critical checks",
}
EXTRACT_TITLES = {
    "problem": "Problem",
    "insight": "The session concluded",
    "dead_ends": "The session said did not work",
    "misleading_intuitions": "The session suspected",
    "critical_checks": "Checks it ran",
}


def is_extract(distiller_id: str) -> bool:
    """A card of sentences lifted from the session (the offline heuristic), not an LLM's summary."""
    return distiller_id.split(":", 1)[0] == "heuristic"


def field_titles(distiller_id: str) -> dict[str, str]:
    return EXTRACT_TITLES if is_extract(distiller_id) else LESSON_TITLES


def pack_card(record: CardRecord, similarity: float | None = None, max_chars: int = 1500) -> str:
    """A card as compact text for an agent: symptom, lesson, traps, checks, outcome; under max_chars."""
    card = record.card
    date = record.started_at.date().isoformat() if record.started_at else "unknown date"
    head = f"Episode {record.session_id} ({date}"
    head += f", project {record.project}" if record.project else ""
    head += f", outcome {card.outcome.value}"
    head += f", similarity {similarity:.2f})" if similarity is not None else ")"
    titles = field_titles(record.distiller.id)
    sections = [
        (titles["problem"], [card.problem]),
        (titles["insight"], [card.insight] if card.insight else []),
        (titles["dead_ends"], card.dead_ends),
        (titles["misleading_intuitions"], card.misleading_intuitions),
        (titles["critical_checks"], card.critical_checks),
    ]
    lines = [head]
    for title, items in sections:
        if items:
            lines.append(f"{title}: " + " | ".join(items))
    return "\n".join(fit_lines(lines, max_chars, 20))[:max_chars]


def episode_text(record: CardRecord, started: bool = True) -> str:
    """The full card (get_episode): every section, the metadata, the distiller (`started`: with its start
    time in the heading; `show` prints it below, as a person reads it)."""
    card = record.card
    lines = [
        f"Episode {record.session_id}"
        + (f" (project {record.project})" if record.project else "")
        + (f", started {record.started_at.isoformat()}" if started and record.started_at else ""),
        f"Outcome: {card.outcome.value}",
    ]
    titles = field_titles(record.distiller.id)
    if is_extract(record.distiller.id):
        lines.append("An offline extract: the session's own sentences, not a distilled summary.")
    lines.append(f"{titles['problem']}: {card.problem}")
    if card.insight:
        lines.append(f"{titles['insight']}: {card.insight}")
    for title, items in (
        ("Steps", card.steps),
        ("Key decisions", card.key_decisions),
        (titles["dead_ends"], card.dead_ends),
        (titles["misleading_intuitions"], card.misleading_intuitions),
        (titles["critical_checks"], card.critical_checks),
    ):
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    if card.tags:
        lines.append("Tags: " + ", ".join(card.tags))
    lines.append(f"Distilled by: {record.distiller.id}")
    return "\n".join(lines)
