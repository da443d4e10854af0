"""The offline distiller: a card from the trajectory alone, no LLM, no network.

problem   the symptom, not a copy of the request (`heuristic_problem`): the request's first sentences
          (only the first when it merely points at a ticket, PR or branch), the title, the tracker's
          description, the user's later symptom sentences, the first error (when it reads as words),
          the compaction summary's intent and the assistant's first diagnosis without code names.
steps     tool calls folded into phases ("Read …", "Edited config.go: <the change the assistant announced>",
          "Ran go test: failed (…)"), completed todo items, at most 12; a passing check already shown is
          not repeated, routine passing checks and reads are the first dropped from the middle.
key_decisions / insight / dead_ends / misleading_intuitions
          sentences of the assistant (and the user's directions) picked by their wording: decision
          language, root-cause language, "didn't work", a hypothesis later contradicted; the insight is
          topped up from the closing summary. Each is rewritten as a statement (`heuristic_statements`:
          no "Perfect!", "I think", trailing colon; "I'll rebase" decides "Rebase"), and dropped when it
          still reads as chatter (`checks.chatter_violations`). "at line 289 …" is never an insight.
critical_checks  failing checks followed by a change of course, and the final check.
outcome   `judge_outcome` (evidence only). tags: file kinds, tools run, frameworks named.
Every field passes `card_violations`: text is sanitised, and an item that cannot be saved is dropped.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator

from episodic.distill.boilerplate import boilerplate_of
from episodic.distill.checks import (
    CHATTER_FIELDS,
    card_violations,
    chatter_breaks,
    chatter_violations,
    judge_outcome,
    text_violations,
)
from episodic.distill.evidence import ordered_events, user_denies
from episodic.distill.heuristic_problem import (
    DIAGNOSIS,
    LINE_NUMBER_RE,
    TENTATIVE_RE,
    problem_statement,
)
from episodic.distill.heuristic_statements import as_statement
from episodic.distill.heuristic_steps import (
    build_phases,
    critical_checks,
    select_steps,
    tags_from,
)
from episodic.distill.heuristic_task import reads_as_words
from episodic.distill.heuristic_text import (
    clip,
    safe_line,
    said_in,
    sentence_hits,
    sentences,
    unique,
    with_first_chars,
)
from episodic.distill.holes import hole_breaks, without_holes
from episodic.distill.readability import is_cut, whole_sentences
from episodic.distill.wording_rules import Rule
from episodic.kernel.errors import DistillError
from episodic.kernel.models import Card, DistillerInfo, DistillUsage, Event, Trajectory
from episodic.kernel.ports import Distiller, DistillResult

_DECISION_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:instead of|rather than|instead\b|switch(?:ed|ing)? to|decided|decision|going with|go with|opted|chose"
        r"|prefer|(?:better|simpler|cleaner|safer) (?:approach|option|fix|way)|the (?:right|best|simplest|cleanest|proper)"
        r" (?:fix|approach|way|solution)|trade-?off|to avoid|not acceptable|shouldn'?t|should not|don'?t want)\b"
    )
)
_CAUSE_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:root cause|the (?:real |actual |underlying )?(?:issue|problem|bug|culprit|cause|reason) (?:was|is|here is)"
        r"|caused by|because|due to|turned out|turns out|the fix (?:was|is)|this happens when|happens because)\b"
    )
)
_FOUND_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:found|see|spotted|identified|got) (?:the|it)(?: real| actual)?(?: issue| problem| bug| culprit| cause)?\b"
    )
)
_FAILED_TRY_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:didn'?t (?:work|help|fix|change)|did not (?:work|help|fix)|doesn'?t (?:work|help|fix)|no luck"
        r"|still (?:fail\w*|broken|the same|seeing|getting|happen\w*)|same (?:error|failure|problem)|none (?:of these )?worked"
        r"|that wasn'?t it|not the (?:cause|issue|problem)|made (?:it|things) worse|dead end|gave up on|abandon\w*)\b"
    )
)
_HYPOTHESIS_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:I suspect|suspect(?:ed)?|I think (?:the|this|it)|probably|most likely|my (?:guess|hypothesis)|might be (?:the|caused|because)"
        r"|could be (?:the|caused|because)|the (?:issue|problem|culprit|cause) (?:is|might be|could be|must be|seems)|looks like (?:the|a|it))\b"
    )
)
_CONTRADICT_RE = re.compile(
    r"(?i)(?:^|\b)(?:actually|that wasn'?t|that's not (?:it|the)|not the (?:cause|issue|problem)|wasn'?t the|turns out|turned out"
    r"|I was wrong|wrong assumption|my mistake|on closer (?:look|inspection)|wait\b|hmm+\b|that didn'?t|not what)"
)
_USER_CORRECTION_RE = re.compile(
    r"(?i)^\s*(?:no\b|nope|not quite|wrong|that'?s not|actually|i don'?t think|ah\.?\s|hm+)|, not\b|\bnot the\b"
)
FRAMEWORK_WORDS = (
    "react", "next.js", "nextjs", "vue", "svelte", "angular", "tailwind", "phoenix", "liveview", "ecto", "ash",
    "django", "flask", "fastapi", "pydantic", "rails", "prisma", "biome", "eslint", "vite", "webpack", "jest",
    "vitest", "playwright", "postgres", "postgresql", "sqlite", "mysql", "redis", "kafka", "graphql", "grpc",
    "docker", "kubernetes", "terraform", "aws", "lambda", "s3", "dynamodb", "bedrock", "github actions", "ci",
    "opentelemetry", "tmux", "xterm.js", "websocket", "oauth", "jwt", "cobra", "bubbletea", "mcp", "claude code",
    "cursor", "git", "worktree", "hooks", "lefthook", "pre-commit", "node", "deno", "bun", "typescript", "golang",
)  # fmt: skip
_FRAMEWORK_RE = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(w) for w in FRAMEWORK_WORDS) + r")(?![\w-])")
_TAG_ALIASES = {
    "nextjs": "next.js",
    "postgresql": "postgres",
    "golang": "go",
    "github actions": "github-actions",
}
# The patterns as rules: a text is scanned only on the lines holding a word each pattern needs.
_DECISION = Rule("decision", _DECISION_RE)
_CAUSE = Rule("cause", _CAUSE_RE)
_FOUND = Rule("found", _FOUND_RE)
_FAILED_TRY = Rule("failed try", _FAILED_TRY_RE)
_HYPOTHESIS = Rule("hypothesis", _HYPOTHESIS_RE)
_CONTRADICT = Rule("contradiction", _CONTRADICT_RE)
WORDING_RULES = (_DECISION, _CAUSE, _FOUND, _FAILED_TRY, _HYPOTHESIS, _CONTRADICT)  # for the property tests
_INSIGHT_STATEMENTS = 2  # an insight is one or two statements
_MIN_SUMMARY_CHARS = 40  # a closing-summary sentence shorter than this is a heading or a status line
_SCAN_CHARS = 4000  # of each assistant message: decisions and causes sit near the top


class HeuristicDistiller(Distiller):
    """A card from the trajectory by rules alone (see the module docstring)."""

    # v5: no cut field, versions and flags kept, the problem as understood, injected context not the request
    # v6: no hole where a path was removed (a path names its file), no agent-CLI boilerplate as an item
    # v7: a removed name, path or code span takes its clause with it, test counts kept, the request follows
    # v8: problem and insight never share a sentence (a why stays in the insight), no tool status as problem
    info = DistillerInfo(kind="heuristic", model="v8")
    uses_survey = False

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        started = time.perf_counter()
        card = build_card(trajectory)  # outcome already judged on evidence: only the text rules remain
        violations = card_violations(card) + chatter_violations(card)
        if violations:  # drop_violations makes this unreachable; kept as the invariant's guard
            raise DistillError("heuristic card breaks the card rules: " + "; ".join(violations))
        return DistillResult(
            card=card, usage=DistillUsage(duration_ms=(time.perf_counter() - started) * 1000)
        )


def build_card(traj: Trajectory) -> Card:
    events = ordered_events(traj)
    phases = build_phases(events)
    assistant = [e.text[:_SCAN_CHARS] for e in events if e.kind == "assistant" and e.text]
    found = insight(traj, assistant)
    problem = problem_statement(traj, events, assistant, lambda s: why_of(s) and said_in(s, found))
    card = Card(
        problem=problem or fallback_problem(traj),
        steps=select_steps(phases, 12),
        key_decisions=key_decisions(assistant, traj.prompts),
        insight=without_said(found, problem),
        # a failed command alone ("Tried to X, it failed") is narration, not what was learnt: left out
        dead_ends=unique(stated_dead_ends(assistant, traj.compact_summaries), 5),
        misleading_intuitions=misleading_intuitions(events),
        critical_checks=critical_checks(phases, 4),
        outcome=judge_outcome(traj),
        tags=tags(traj, events),
    )
    return drop_violations(card)


# ------------------------------------------------------------------ problem


def without_said(insight: str, problem: str) -> str:
    """The insight less the sentences the problem already says (as it was, when it repeats none)."""
    kept = [s for s in sentences(insight) if not said_in(s, problem)]
    return insight if len(kept) == len(sentences(insight)) else " ".join(kept)


def why_of(sentence: str) -> bool:
    """A sentence saying why (a cause, a diagnosis): the insight keeps it when the problem would say it too;
    any other sentence both would take (the task, a symptom) stays in the problem and leaves the insight."""
    return bool(_CAUSE.search(sentence) or DIAGNOSIS.search(sentence))


def fallback_problem(traj: Trajectory) -> str:
    """When no prompt or title says anything: what the session touched."""
    names = [n for n in (p.rsplit("/", 1)[-1] for p in traj.files_edited or traj.files_read) if n][:3]
    what = f" on {', '.join(names)}" if names else ""
    project = safe_line(traj.project, 60)
    return (
        safe_line(f"Unstated task{what}" + (f" in the {project} project" if project else ""), 300)
        or "Unstated task"
    )


# ------------------------------------------------------------------ sentences by wording


def matching_sentences(texts: Iterable[str], pattern: Rule, low: int, high: int) -> Iterator[str]:
    """Sentences matching `pattern`; a text is split only when the pattern occurs in it at all, and its
    sentences are scanned in one pass over them joined by newlines (no pattern here can span one)."""
    for text in texts:
        if pattern.search(text):
            items = sentences(text)
            for index in sentence_hits(items, pattern):
                sentence = items[index]
                if low <= len(sentence) <= high and not sentence.endswith("?"):
                    yield sentence


def first_safe(candidates: Iterable[str], limit: int, chars: int, *, intent: bool = False) -> list[str]:
    """Rewrite candidates lazily until `limit` distinct card-safe statements are found (chatter dropped)."""
    return unique((as_statement(c, chars, intent=intent) for c in candidates), limit)


def key_decisions(assistant: list[str], prompts: list[str]) -> list[str]:
    from_user = matching_sentences((p[:1500] for p in prompts), _DECISION, 25, 400)
    from_assistant = matching_sentences(assistant, _DECISION, 30, 400)
    candidates = first_safe(itertools.chain(from_user, from_assistant), 10, 200, intent=True)
    worded = [c for c in candidates if reads_as_words(c)]  # prose first: code-heavy lines say less
    return [*worded, *(c for c in candidates if c not in worded)][:5]


def insight(traj: Trajectory, assistant: list[str]) -> str:
    """Root-cause sentences: the closing summary first, then the latest diagnosis, then the compaction summary."""
    found: list[str] = []
    closing = traj.closing_summary[:_SCAN_CHARS]
    for source in (
        [closing] if closing else [],
        list(reversed(assistant[-40:])),
        traj.compact_summaries[-1:],
    ):
        for text in source:
            if not (_CAUSE.search(text) or _FOUND.search(text)):
                continue
            items = sentences(text)
            causes, founds = set(sentence_hits(items, _CAUSE)), set(sentence_hits(items, _FOUND))
            for index in sorted(causes | founds):  # a sentence matching neither adds nothing
                sentence = items[index]
                if LINE_NUMBER_RE.search(sentence) or TENTATIVE_RE.search(sentence):
                    continue  # "at line 289 …" is where, not why; "let me check if …" is not a finding
                if index in causes and 30 <= len(sentence) <= 500:
                    found.append(sentence)
                elif (
                    index in founds
                    and index + 1 < len(items)
                    and len(sentence) < 60
                    and len(items[index + 1]) >= 40
                ):
                    found.append(items[index + 1])
            if len(found) >= 2:
                break
        if found:
            break
    lines = first_safe(found, 2, 300)
    if len(lines) < _INSIGHT_STATEMENTS and closing:  # the closing summary's statements that read as words
        told = (
            s
            for s in sentences(closing)
            if len(s) >= _MIN_SUMMARY_CHARS and reads_as_words(s) and not LINE_NUMBER_RE.search(s)
        )
        lines = unique([*lines, *first_safe(told, _INSIGHT_STATEMENTS, 300)], _INSIGHT_STATEMENTS)
    # each statement ends as one: two joined must not read as a single run-on sentence
    return clip(" ".join(line if line[-1] in ".!?" else line + "." for line in lines if line), 600)


def stated_dead_ends(assistant: list[str], compact_summaries: list[str]) -> list[str]:
    texts = [*assistant, *(c[:8000] for c in compact_summaries)]
    return first_safe(matching_sentences(texts, _FAILED_TRY, 25, 400), 4, 200)


def misleading_intuitions(events: list[Event]) -> list[str]:
    """A hypothesis the assistant stated that a later message (its own or the user's) contradicted."""
    found: list[str] = []
    hypothesis = ""
    for event in events:
        if event.kind == "assistant" and event.text:
            text = event.text[:_SCAN_CHARS]
            if hypothesis and _CONTRADICT.search(text[:300]):
                found.append(hypothesis)
                hypothesis = ""
            for sentence in matching_sentences((text,), _HYPOTHESIS, 30, 300):
                hypothesis = sentence
        elif event.kind == "prompt" and hypothesis:
            if _USER_CORRECTION_RE.search(event.text[:300]) or user_denies(event.text):
                found.append(hypothesis)
            hypothesis = ""
    lines = first_safe(found, 4, 180)
    return [f"{line.rstrip('.')} (later shown wrong)" for line in lines]


def tags(traj: Trajectory, events: list[Event]) -> list[str]:
    counts: Counter[str] = tags_from(events, [*traj.files_edited, *traj.files_read])
    words = " ".join([traj.request[:2000], *traj.titles, *(p[:500] for p in traj.prompts[1:10])])
    for match in _FRAMEWORK_RE.finditer(words.lower()):
        word = match.group(1).lower()
        counts[_TAG_ALIASES.get(word, word)] += 2
    return [t for t, _ in counts.most_common(12) if not text_violations("", t)]


def drop_violations(card: Card) -> Card:
    """The last resort: items that still break a card rule are dropped, texts are re-sanitised."""
    update: dict[str, object] = {}
    for name in ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks", "tags"):
        items = getattr(card, name)
        chatter = name in CHATTER_FIELDS
        kept = [
            i
            for i in items
            if i
            and not text_violations(name, i)
            and not (chatter and chatter_breaks(i))
            and not boilerplate_of(i)  # the agent CLI's own text ("… run: claude -r <id>"), not the work's
        ]
        if kept != items:
            update[name] = kept
    for name in ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks"):
        items = update.get(name, getattr(card, name))
        mended = [m for m in (without_holes(i) for i in items) if m and not is_cut(m)]  # type: ignore[attr-defined]
        if mended != items:
            update[name] = mended
    for name in ("problem", "insight"):
        text = getattr(card, name)
        if text_violations(name, text):
            text = update[name] = safe_line(text, 600) or ("Unstated task" if name == "problem" else "")  # type: ignore[assignment]
        if text and hole_breaks(text):  # a removed code span or path left a gap: drop the clause
            text = update[name] = without_holes(text) or ("Unstated task" if name == "problem" else "")
        if text and is_cut(text):  # a cut sentence is dropped, never shown cut
            text = update[name] = whole_sentences(text) or ("Unstated task" if name == "problem" else "")
        if name in CHATTER_FIELDS and text and chatter_breaks(text):
            update[name] = ""
    return card.model_copy(update=update) if update else card
