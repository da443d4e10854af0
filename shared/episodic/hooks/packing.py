"""What the prompt hook injects: verified cards in full, weak hits as one-line pointers, packed into the
character budget and wrapped in the injected-context markers. Stdlib only."""

from __future__ import annotations

from typing import Any

from episodic.plumbing.hook_choice import MAX_CARDS, MAX_POINTERS, is_strong
from episodic.plumbing.marker import escape_markers, wrap_injected

__all__ = ["MAX_CARDS", "MAX_POINTERS", "build_context", "is_strong"]
MAX_CARD_CHARS = 1400  # one episode stays well under 1,500 characters even when it is the only one
DEFAULT_MAX_CHARS = 4000
HEADER = (
    "Episodic memory: past sessions that closely match this prompt and ended with a verified fix. "
    "They come from other sessions and were not checked against the current code."
)
# stdlib copies of episodic.cards.present's WEAK_HEADER / POINTER_CHARS / first_sentence (a test pins them)
WEAK_HEADER = "Possibly related past sessions (get_episode ID gives the card):"
POINTER_CHARS = 120
POINTER_ID_CHARS = 8
_SENTENCE_END = (". ", "? ", "! ", "\n")


# stdlib copies of episodic.cards.present.cut / fit_lines (the hook imports nothing of the core; a test pins them)
def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _fit_lines(lines: list[str], budget: int, min_room: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        remaining = budget - sum(len(x) + 1 for x in out)
        if remaining <= min_room:
            break
        out.append(_cut(line, remaining - 1))
    return out


def _first_sentence(text: str, limit: int = POINTER_CHARS) -> str:
    """Stdlib copy of episodic.cards.present.first_sentence (a test pins them)."""
    text = text.strip()
    ends = [i for i in (text.find(mark) for mark in _SENTENCE_END) if i > 0]
    sentence = " ".join(text[: min(ends) + 1].split()) if ends else " ".join(text.split())
    if len(sentence) <= limit:
        return sentence
    room = sentence[: max(limit - 1, 0)]
    word = room.rsplit(" ", 1)[0] if " " in room[limit // 2 :] else room
    return word.rstrip(" ,;:-") + "…"


TITLE_WORDS = 5  # a first sentence this short is a title: the next one names the matter


def _pointer_problem(problem: str, limit: int = POINTER_CHARS) -> str:
    """Stdlib copy of episodic.cards.present.pointer_problem (a test pins them)."""
    first = _first_sentence(problem, limit)
    rest = problem.strip()[len(first) :] if problem.strip().startswith(first) else ""
    if len(first.split()) > TITLE_WORDS or not rest.strip() or first.endswith(("…", "?")):
        return first
    room = limit - len(first) - 1
    return f"{first} {_first_sentence(rest, room)}" if room > 20 else first


def pointer_line(hit: dict[str, Any]) -> str:
    """Stdlib copy of episodic.cards.present.pointer_line over a search result (a test pins them)."""
    problem = _pointer_problem(str((hit.get("card") or {}).get("problem") or ""))
    return f"- {hit.get('date') or 'undated'} {str(hit.get('session_id', '?'))[:POINTER_ID_CHARS]} {problem}"


# How a card's fields are introduced: an offline (heuristic) card is the session's own sentences, said as such
EXTRACT_TITLES = {
    "problem": "Its problem, as the session put it",
    "dead_ends": "The session said did not work",
    "misleading_intuitions": "The session suspected",
    "critical_checks": "Checks it ran",
}
LESSON_TITLES = {
    "problem": "Its problem was",
    "dead_ends": "Dead ends there",
    "misleading_intuitions": "What looked guilty but was not",
    "critical_checks": "Checks that mattered",
}


def is_extract(hit: dict[str, Any]) -> bool:
    """Stdlib copy of episodic.cards.present.is_extract over a search result (a test pins them)."""
    return str(hit.get("distiller") or "").split(":", 1)[0] == "heuristic"


def episode_titles(hit: dict[str, Any]) -> dict[str, str]:
    return EXTRACT_TITLES if is_extract(hit) else LESSON_TITLES


def episode_lead(hit: dict[str, Any], where: str) -> str:
    """The first line: what the past session concluded, in its own words for an offline card."""
    insight = (hit.get("card") or {}).get("insight") or ""
    match = f"A close past match{f' ({where})' if where else ''}"
    if is_extract(hit):
        return (
            f"{match}. The session concluded: {insight}"
            if insight
            else f"{match}, in the session's own words."
        )
    return f"{match} found: {insight or 'a verified fix'}"


def format_episode(hit: dict[str, Any], max_chars: int) -> str:
    card = hit.get("card") or {}
    where = ", ".join(
        x
        for x in (
            str(hit.get("date") or ""),
            f"project {hit['project']}" if hit.get("project") else "",
            f"similarity {hit['similarity']:.2f}" if isinstance(hit.get("similarity"), int | float) else "",
        )
        if x
    )
    titles = episode_titles(hit)
    lines = [episode_lead(hit, where), f"{titles['problem']}: {card.get('problem', '')}"]
    for title, key in (
        (titles["dead_ends"], "dead_ends"),
        (titles["misleading_intuitions"], "misleading_intuitions"),
        (titles["critical_checks"], "critical_checks"),
    ):
        items = [str(i) for i in card.get(key) or []]
        if items:
            lines.append(f"{title}: " + " | ".join(items))
    reference = _cut(
        f"(session {hit.get('session_id', '?')}; the full card is available from get_episode)", 120
    )
    budget = max_chars - len(reference) - 1  # the reference line always fits
    return "\n".join([*_fit_lines(lines, budget, 40), reference])


def build_context(hits: list[dict[str, Any]], max_chars: int, scratch: str = "") -> str:
    """The wrapped context, never over max_chars, the closing marker always kept; the scratch block (prior
    similar attempts) after the episodes, inside the same marker, its room taken from the episodes'."""
    inner_budget = max_chars - len(wrap_injected(""))
    scratch = scratch if len(scratch) + 2 < inner_budget // 2 else ""
    inner_budget -= len(scratch) + 2 if scratch else 0
    cards = [h for h in hits if is_strong(h)]
    pointers = "\n".join([WEAK_HEADER, *(pointer_line(h) for h in hits if not is_strong(h))])
    pointers = pointers if len(pointers) > len(WEAK_HEADER) else ""
    room = inner_budget - (len(pointers) + 2 if pointers else 0)
    overhead = len(HEADER) + 2 * len(cards)
    per_card = min(max((room - overhead) // max(len(cards), 1), 200), MAX_CARD_CHARS)
    episodes = [HEADER, *(format_episode(h, per_card) for h in cards)] if cards else []
    inner = _cut(escape_markers("\n\n".join(x for x in ("\n\n".join(episodes), pointers) if x)), inner_budget)
    return wrap_injected("\n\n".join(x for x in (inner, escape_markers(scratch)) if x))
