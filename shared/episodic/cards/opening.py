"""The session's opening exchange: the user's first words, embedded beside an offline card.

An extractive (heuristic) card keeps the session's sentences, not the words a user later searches with;
an LLM's card restates the problem in them. The first main-thread exchange, an extra rendering of heuristic
cards at the weight of the other voting renderings, lifts their recall and leaves LLM cards as they were
(measured in docs/evaluation.md, "Offline cards against LLM cards").
"""

from __future__ import annotations

from episodic.kernel.models import Trajectory

# about the embedder's 256-token window: the rest of a long first prompt would not be read anyway
EXCHANGE_CHARS = 1200


def exchanges(trajectory: Trajectory, limit: int, max_chars: int = EXCHANGE_CHARS) -> list[str]:
    """Each real user prompt of the main thread with the assistant text that follows it (scrubbed, as the
    trajectory is), at most `limit`, each cut to `max_chars`."""
    found: list[list[str]] = []
    for event in trajectory.events:
        if event.agent_id is not None or not event.text:
            continue
        if event.kind == "prompt":
            if len(found) == limit:
                break
            found.append([f"User: {event.text}"])
        elif event.kind == "assistant" and found:
            found[-1].append(f"Assistant: {event.text}")
    return ["\n".join(parts)[:max_chars] for parts in found]


def opening_text(trajectory: Trajectory) -> str:
    """The first exchange, or "" for a session with no main-thread prompt."""
    found = exchanges(trajectory, limit=1)
    return found[0] if found else ""
