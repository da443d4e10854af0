"""Pseudo-queries: a second yardstick no first-stage choice was tuned on.

Each session's *later* prompts (never its first: the offline cards' `opening` vector reads the first) are
asked with that session as the target, as a user returning to a problem might word it. They are noisy by
nature (a later prompt may lean on what came before), so they compare systems on the same footing rather
than promise an absolute figure. The rules are data (`PseudoRules`); the prompts are already scrubbed (the
parser scrubs every trajectory).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.evaluation.queries import EvalQuery
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import Trajectory


@dataclass(frozen=True)
class PseudoRules:
    """Which later prompts make a query: long enough to name a problem, not a command or a pasted marker."""

    per_session: int = 2  # the first qualifying later prompts of each session
    min_words: int = 10  # "commit", "push", "do it" name no problem
    max_chars: int = 400  # a pasted log is cut, as the hook cuts a long prompt
    # slash commands, harness tags, interruption and caveat markers, pasted tool output
    skip_prefixes: tuple[str, ...] = ("/", "<", "[Request interrupted", "Caveat:", "```")


WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def qualifies(prompt: str, rules: PseudoRules) -> bool:
    text = prompt.strip()
    if not text or text.startswith(rules.skip_prefixes):
        return False
    return len(WORD.findall(text)) >= rules.min_words


def _key(prompt: str) -> str:
    return " ".join(prompt.lower().split())


def pseudo_queries(
    trajectories: Mapping[str, Trajectory], rules: PseudoRules | None = None
) -> list[EvalQuery]:
    """Up to `per_session` later prompts per session, each with its session as the target; a prompt that
    occurs in more than one session (a habit, not a problem) or repeats the first prompt is left out."""
    rules = rules or PseudoRules()
    seen = Counter(_key(p) for t in trajectories.values() for p in set(t.prompts))
    out: list[EvalQuery] = []
    for session_id in sorted(trajectories):
        trajectory = trajectories[session_id]
        first = _key(trajectory.request or (trajectory.prompts[0] if trajectory.prompts else ""))
        taken = 0
        for prompt in trajectory.prompts[1:]:
            key = _key(prompt)
            if taken >= rules.per_session or key == first or seen[key] > 1 or not qualifies(prompt, rules):
                continue
            taken += 1
            query = " ".join(prompt.split())[: rules.max_chars]
            out.append(EvalQuery(query=query, session_id=session_id, id=f"p{len(out) + 1:04d}"))
    return out


def write_queries(queries: Iterable[EvalQuery], out: Path) -> int:
    """The queries as the JSONL `episodic eval --queries` reads; the number written."""
    rows = [
        json.dumps(q.model_dump(exclude_none=True, exclude_defaults=True), ensure_ascii=False)
        for q in queries
    ]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    except OSError as exc:
        raise InvalidArgumentError(f"cannot write the queries to {out}: {exc.strerror or exc}") from exc
    return len(rows)


def run_pseudo_queries(
    settings: Any, transcripts: list[str], rules: PseudoRules, progress: Any = None
) -> tuple[list[EvalQuery], int]:
    """Parse the corpus (cached, as `episodic eval` does) and make its pseudo-queries; also the session count."""
    from episodic.assembly import build_source
    from episodic.evaluation.cache import WorkCache
    from episodic.evaluation.corpus import load_corpus

    cache = WorkCache(settings.cache_dir / "eval")
    corpus = load_corpus(settings, build_source(settings), transcripts, cache, progress)
    return pseudo_queries(corpus.trajectories, rules), len(corpus.trajectories)
