"""The heuristic card's `problem`: the symptom a developer would type next time, not a copy of the request.

Sources, in order of trust: the request's first sentences (markup, pasted logs and commit headers removed; kept
short when it only points elsewhere: a ticket, "fix the failing tests"), the session title, the task a tracker
showed (`bd show`, `gh issue view`, `gh pr view`), the compaction summary's stated intent, the assistant's first
diagnosis ("The issue is …"), the first error a check showed (only when it reads as words), and later prompts'
sentences that state a symptom ("still fails"). Meta talk with nothing to search for is dropped, a request's "can
you / please" is cut ("Fix X"), and a short or pointer request gets the assistant's first restatement of the task."""

from __future__ import annotations

import re
from collections.abc import Callable

from episodic.distill.boilerplate import tool_output_of
from episodic.distill.checks import text_violations
from episodic.distill.evidence import check_result, shell_command
from episodic.distill.heuristic_statements import as_statement
from episodic.distill.heuristic_steps import error_line
from episodic.distill.heuristic_task import (
    EDIT_TOOL_NAMES,
    first_sentences,
    reads_as_words,
    section_prose,
    task_description,
)
from episodic.distill.heuristic_text import (
    clip,
    looks_like_prose,
    safe_line,
    sentence_hits,
    sentences,
    unmark,
    with_first_chars,
)
from episodic.distill.holes import GAP, closed, hole_breaks, without_holes
from episodic.distill.wording_rules import Rule
from episodic.kernel.models import Event, Trajectory

_COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_COMMAND_NAME_RE = re.compile(r"<command-name>/?([\w:-]+)</command-name>")
_INTENT_RE = re.compile(
    r"Primary Request and Intent:?\**:?\s*(.{20,1500}?)(?:\n\s*\**\s*\d+\.\s|\n\n\S|\Z)", re.S
)
_SYMPTOM_WORDS_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:fail\w*|error\w*|broken|bug|crash\w*|doesn'?t|does not|isn'?t|won'?t|can'?t|cannot|not working|wrong"
        r"|missing|empty|still|why|instead|stuck|hang\w*|slow|flaky|never|no longer|stopped|unexpected\w*|warning|not showing"
        r"|disappear\w*|lost|but no|nothing|not \w+(?:ed|ing))\b"
    )
)
# a pasted commit header or log line: never part of a problem statement
_PASTED_RE = re.compile(
    r"(?i)^\s*(?:author|date|commit|co-authored-by|signed-off-by|merge|from|to|cc|subject)\s*:|[\w.+-]+@[\w-]+\.\w+"
)


def pasted(line: str) -> bool:
    """A commit header or mail line; without "@" only the anchored header alternative can match, so one
    `match` at the start replaces the scan of every position (speed)."""
    return bool(_PASTED_RE.search(line) if "@" in line else _PASTED_RE.match(line))


# a later prompt that starts a new, separate task rather than describing this one
_PASTE_START_RE = re.compile(r"\s(?=[{\[]\s*[\"{]|\d{4}-\d\d-\d\d[T ]|\w+\(\S|[\w.]+:\d+\b)")
_STYLE_CHECK_RE = re.compile(
    r"(?i)\b(?:lint\w*|fmt|format\w*|vet|credo|dialyzer|biome|eslint|prettier|ruff|mypy|tsc|typecheck|staticcheck)\b"
)
_NEW_TASK_RE = re.compile(
    r"(?i)^\s*(?:use a subagent|make me|create (?:a|an|me)|write (?:a|an|me)|generate|draft|now (?:let'?s|do)"
    r"|next,? |also,? can you (?:add|create|write))"
)
# a request that only points at the work (a ticket, a PR, a branch): the problem must come from elsewhere
_POINTER_RE = re.compile(
    r"(?i)^\W*(?:(?:can|could|would) (?:you|we)(?: please)? |please |let'?s |pls |ok,? |okay,? )?"
    r"(?:work on|pick up|look at|continue|resume|implement the following plan|review|rebase|merge|commit"
    r"|fix (?:the )?(?:failing|broken) (?:tests?|build|ci|lint)|(?:bead|ticket|issue|task|pr|pull request)\s*#?[\w-]*\d)"
)
_DIAGNOSIS_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:the (?:root cause|real (?:issue|problem|bug)|actual (?:issue|problem|bug)|underlying (?:issue|problem)"
        r"|issue|problem|bug|culprit|cause) (?:is|was|here is)\b|root cause|this happens (?:because|when)"
        r"|(?:is|was|are|were) caused by|the reason (?:is|was)|fails because|failing because|broke because"
        r"|(?:likely|probable|possible) (?:cause|culprit|reason) (?:is|was))"
    )
)
TENTATIVE_RE = with_first_chars(
    re.compile(r"(?i)\blet me\b|\blet'?s (?:check|see|look)|^(?:i'?ll|i will|now|maybe|if)\b|\bmight be\b")
)
DIAGNOSIS = Rule("diagnosis", _DIAGNOSIS_RE)  # scanned only on the lines holding its words
_CODE_WORD_RE = re.compile(r"\w[._/\\(){}<>=*:]+\w|[a-z][A-Z]|\w_\w|\(\)")
LINE_NUMBER_RE = re.compile(r"(?i)\b(?:at |on |in )?lines? \d+")
_ASSISTANT_SCAN = 60  # assistant messages searched for the first diagnosis


def request_text(prompt: str, joiner: str = " ") -> str:
    """The request's prose: slash-command arguments, lines before any pasted log, markup removed."""
    args = _COMMAND_ARGS_RE.search(prompt)
    if args and args.group(1).strip():
        name = _COMMAND_NAME_RE.search(prompt)
        prompt = (f"{name.group(1)}: " if name else "") + args.group(1)
    kept: list[str] = []
    size = 0
    for line in unmark(prompt[:6000]).splitlines():
        line = line.strip()
        if not line or pasted(line):
            continue
        if not looks_like_prose(line):
            prefix = _PASTE_START_RE.split(line, 1)[0].strip()
            if len(prefix) >= 30 and looks_like_prose(prefix):  # prose, then a log pasted on the same line
                kept.append(prefix)
                break
            if size >= 60:
                break
            continue
        kept.append(line)
        size += len(line)
        if size > 800:
            break
    return joiner.join(kept)


def first_symptom(events: list[Event]) -> str:
    """The first error a failing check showed, normalised; after the first edit a lint or format
    complaint is the work's own noise, not the symptom the session started from."""
    fallback = ""
    edited = False
    for event in events:
        call = event.tool
        if event.kind != "tool" or call is None or call.rejected:
            continue
        if call.name in EDIT_TOOL_NAMES:
            edited = True
        if not (call.is_error or call.exit_code) or check_result(call) is None:
            continue  # only a failing test, build or lint run states the symptom
        if edited and _STYLE_CHECK_RE.search(shell_command(call)):
            continue
        line = error_line(call.output)
        if line and call.exit_code not in (None, 0):
            return line
        fallback = fallback or line
    return fallback


def first_diagnosis(assistant: list[str], limit: int = 2) -> list[str]:
    """The assistant's first root-cause sentences, when they read as words."""
    found: list[str] = []
    for text in assistant[:_ASSISTANT_SCAN]:
        if not DIAGNOSIS.search(text):
            continue
        items = sentences(text)
        for sentence in (items[index] for index in sentence_hits(items, DIAGNOSIS)):
            if not (40 <= len(sentence) <= 400) or sentence.endswith("?") or LINE_NUMBER_RE.search(sentence):
                continue
            if reads_as_words(sentence) and not TENTATIVE_RE.search(sentence):
                line = safe_line(sentence, 220)
                if line and line not in found:
                    found.append(line)
                    if len(found) >= limit:
                        return found
    return found


# meta talk in a request, carrying nothing a search would need: greetings, plan boilerplate, editor notes
_META_SENTENCE_RE = re.compile(
    r"(?i)^\W*(?:(?:hi|hello|hey|thanks|thank you|good morning)\b\W*$|implement the following plan|caveat:"
    r"|ultrathink|think (?:hard|deeply)\W*$|you are an?\b|your task is|the user (?:opened|selected)"
    r"|this may or may not be related|operation stopped by hook|\[request interrupted)"
)
# how a request addresses the assistant, dropped from the front: "can you please fix X" states "Fix X"
_REQUEST_PREFIX_RE = re.compile(
    r"(?i)^\W*(?:(?:hey|hi|ok|okay|so|alright|hmm+)\b\W*)?(?:i think\s+)?(?:(?:can|could|would|will) (?:you|we)(?: please)?"
    r"|please|pls|i (?:want|need|would like|'?d like) (?:you|us) to|help me|let'?s|lets|we (?:need|want|have) to|we should"
    r"|i (?:need|want|would like) to|i'?d like (?:us )?to|plan:)\s+"
)
PROBLEM_CHARS = 320  # one request sentence at most: a symptom, as a developer would search for it


def symptom_sentences(prompt: str, limit: int) -> str:
    """A later prompt's sentences that state a symptom (none when the prompt starts a new task)."""
    text = request_text(prompt, "\n")
    if not (15 <= len(text) <= 600) or _NEW_TASK_RE.match(text):
        return ""
    items = [
        _REQUEST_PREFIX_RE.sub("", s, count=1)
        for s in sentences(text)
        if not _NEW_TASK_RE.match(s) and not _META_SENTENCE_RE.search(s)
    ]
    first = next((i for i, s in enumerate(items) if len(s) >= 25 and _SYMPTOM_WORDS_RE.search(s)), None)
    if first is None:
        return ""
    start = first
    # unpunctuated fragments just before it (list items, "testing shows:") belong to the same symptom
    while (
        start > 0 and first - start < 2 and len(items[start - 1]) < 80 and items[start - 1][-1] not in ".!?"
    ):
        start -= 1
    picked = items[start:]
    picked = [
        s
        for i, s in enumerate(picked)
        if i + 1 >= len(picked) or not picked[i + 1].startswith(s.rstrip(".…"))
    ]
    return first_sentences(" ".join(picked), limit)


def _sentence(text: str) -> str:
    return text if not text or text[-1] in ".?!…" else text + "."


# words, not identifiers, although they hold dots or dashes: versions ("1.25.6", "v2.0.1"), flags ("--no-verify")
_WORD_NOT_CODE_RE = re.compile(
    r"^[(\"']?(?:v?\d+(?:\.\d+)+[a-z0-9-]*|--?[a-z][a-z0-9-]*)[)\"',.;:!?]*$", re.I
)


def plain_words(text: str) -> str:
    """Code names (`fooBar`, `a.b`, `x_y`, `f()`) dropped: the words a developer would type about it. Version
    numbers and flags are words. A sentence that would be left with a gap keeps its names instead ("The problem
    is that handleTabChange resets the form"), or goes when it breaks a card rule."""
    kept: list[str] = []
    for sentence in sentences(text):
        words = [
            w if _WORD_NOT_CODE_RE.match(w) or not _CODE_WORD_RE.search(w) else GAP for w in sentence.split()
        ]
        plain = closed(without_holes(" ".join(words)))
        if plain and len(plain.split()) >= len(words) - words.count(GAP):
            kept.append(plain)
        elif not text_violations("", sentence) and not hole_breaks(sentence):
            kept.append(sentence)
    return " ".join(kept) if len(" ".join(kept).split()) >= 6 else ""


def request_sentences(prompt: str) -> list[str]:
    """The request's sentences without meta talk, each addressed to no one ("Fix X", not "can you fix X")."""
    kept: list[str] = []
    for sentence in sentences(request_text(prompt, "\n")):
        if _META_SENTENCE_RE.search(sentence):
            continue
        line = safe_line(_REQUEST_PREFIX_RE.sub("", sentence, count=1), PROBLEM_CHARS)
        if len(line.split()) >= 3:
            kept.append(line[0].upper() + line[1:] if line[:1].islower() and line[1:2] != "." else line)
    return kept


# a sentence that only says where the assistant will look
_EXPLORING_RE = re.compile(
    r"(?i)^(?:read|look|check|explore|examine|search|start|begin|understand|first|see|find|review|investigate"
    r"|analy[sz]e|get|help|take|run|open|gather|verify|dig|research|you|know|tell)\b"
)
# … unless it goes on to name the change ("Find and remove the session trailer command"), not "and fix them"
_GOES_ON_RE = re.compile(
    r"(?i)\band (?:then )?(?:fix|remove|update|add|implement|change|replace|rename|convert|delete|move)\s+"
    r"(?!(?:them|it|this|that|these|those|the (?:issues?|errors?|problems?|changes?))\W*$)"
)
# a restatement that names no task: "Create the task list and implement the changes."
_GENERIC_TASK_RE = re.compile(
    r"(?i)\b(?:task|todo) list\b|\bimplement (?:the|these|all|those) (?:changes|plan|fixes)\b"
)
_RESTATEMENT_WORDS = 8  # a restatement of the task says what, not just "Let me fix this"
_RESTATEMENT_CHARS = 240
_RESTATEMENT_SENTENCES = 5  # of each of the first assistant messages
# a report of work done ("Created LICENSE …", "Done - updated …"): what the session concluded, not its task
_REPORT_RE = re.compile(
    r"(?i)^\W*(?:done\b\W*)?(?:added|created|updated|fixed|resolved|removed|changed|implemented|renamed|moved"
    r"|deleted|replaced|refactored|reverted|merged|rebased|committed|pushed|installed|bumped|upgraded|converted"
    r"|applied|adjusted|modified|simplified|extracted|restored|enabled|disabled|configured|rewrote|edited|cleaned"
    r"|finished|completed|wrote|made|ran|built)\b"
)

# a sentence that says how the work ended ("… fixed the job and the tests pass") reports, it does not restate
_OUTCOME_RE = re.compile(
    r"(?i)\b(?:fixed|fixes|resolved|solved|tests? (?:now )?pass(?:es|ed)?|(?:now|again) (?:works|passes|succeeds)"
    r"|works (?:now|again))\b"
)


def assistant_restatement(assistant: list[str], *, wider: bool = False, reports: bool = False) -> str:
    """The assistant's first statement of what it will do, in its own (often more general) words. `wider`
    (when nothing else states the problem): an exploring sentence too when it goes on to name the change;
    `reports` (when nothing else states it at all): a report of the work done too."""
    for text in assistant[:3]:
        for sentence in sentences(text)[:_RESTATEMENT_SENTENCES]:
            if len(sentence) > _RESTATEMENT_CHARS or len(sentence.split()) < _RESTATEMENT_WORDS:
                continue  # too long to keep whole, or too short to say what: not worth cleaning
            # code names dropped, as for diagnoses; a diagnosis is added by `first_diagnosis` in its place
            line = plain_words(as_statement(sentence, _RESTATEMENT_CHARS, intent=True))
            if (
                _DIAGNOSIS_RE.search(line)
                or LINE_NUMBER_RE.search(line)
                or (_EXPLORING_RE.match(line) and not (wider and _GOES_ON_RE.search(line)))
                or _GENERIC_TASK_RE.search(line)
                or ((_REPORT_RE.match(line) or _OUTCOME_RE.search(line)) and not reports)
            ):
                continue
            if len(line.split()) >= _RESTATEMENT_WORDS and reads_as_words(line):
                return line
    return ""


REQUEST_CHARS = 300  # the request: its first sentences, whole
MIN_UNDERSTOOD_CHARS = 250  # room kept for what the session understood, before the request is added


def problem_statement(
    traj: Trajectory,
    events: list[Event],
    assistant: list[str],
    leave_out: Callable[[str], bool] = lambda sentence: False,
) -> str:
    """The problem as the session came to understand it (the tracker's task, the session title, the assistant's
    restatement of what it will do, the compaction summary's intent, the plan's problem section, the user's
    later symptoms, the first error, the first diagnosis), then what was asked ("Asked: …", the request's first
    sentences, only the first when it merely points at a ticket or branch); the request alone only when nothing
    better exists. A question asked follows what the session found, as any request does. A tool's status line
    said back ("Already up to date …") is never part of it, nor a sentence `leave_out` keeps for another field."""
    request = first_sentences(" ".join(request_sentences(traj.request)), REQUEST_CHARS)
    points_elsewhere = bool(_POINTER_RE.search(request[:80]))
    if points_elsewhere:  # the request only points at the work: its first sentence is enough
        request = first_sentences(sentences(request)[0], 120)
    pointer = points_elsewhere or len(request) < 140
    budget = max(600 - len(request) - 8, MIN_UNDERSTOOD_CHARS)
    parts: list[str] = []

    def add(text: str) -> None:
        text = " ".join(s for s in sentences(text) if not tool_output_of(s) and not leave_out(s))
        low = " ".join(parts).lower()
        if text and text.lower().rstrip(".") not in low and len(low) + len(text) <= budget:
            parts.append(_sentence(text))

    add(task_description(events))
    if traj.titles:
        add(safe_line(traj.titles[-1], 120))
    if pointer or len(request) < 200:
        add(assistant_restatement(assistant))
        for summary in traj.compact_summaries[:1]:
            match = _INTENT_RE.search(summary)
            add(first_sentences(match.group(1), 240) if match else "")
    if points_elsewhere or len(traj.request) > 1000:  # a pasted plan or ticket: its problem section
        add(section_prose(traj.request, 300))
    restated = 0
    for prompt in traj.prompts[1:12]:  # the user's own words about what still goes wrong
        if restated >= 2:
            break
        line = symptom_sentences(prompt, 200)
        if line:
            add(line)
            restated += 1
    symptom = first_symptom(events)
    if symptom and reads_as_words(symptom):
        add(f"Symptom: {symptom}")
    for line in first_diagnosis(assistant, 3 if pointer else 2):
        add(plain_words(line))
    if not parts and not pointer:  # a long request: the assistant's own words for it, before the request's
        add(assistant_restatement(assistant, wider=True))
    if (
        not parts and pointer
    ):  # a request that only points at the work: the assistant's report of it says what
        add(assistant_restatement(assistant, reports=True))
    if not parts:  # nothing better: the request
        return _sentence(request) if request else ""
    said = " ".join(parts)
    if request and request.lower().rstrip(".?!") not in said.lower():
        said += " Asked: " + _sentence(request)
    return clip(said, 600)
