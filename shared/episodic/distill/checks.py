"""The card rules every distiller obeys, and the outcome judged on evidence.

Card rules (`card_violations`): a card keeps the method, not the incidentals. No field may hold
  - code: fenced blocks, lines with braces and semicolons, `def`/`func`/`fn`/`function`/`class`
    definitions, import statements, shell pipelines or chains with flags (`| grep`, `2>&1`, `$(…)`,
    `a && b --flag`), dotted calls (`pkg.mod.fn(`, `obj.method(arg, …)`), `:=` / `const x =` statements;
  - file paths: absolute unix (`/a/b`, `~/x`) or windows (`C:\\x`) paths, and relative paths with a
    folder and a source-file extension (`src/foo/bar.go`); a bare file name (`package.json`,
    `CLAUDE.md`) and a command name with a flag (`go test`, `npm run check`, `--no-verify`) are allowed;
  - stack traces: `Traceback (most recent call last)`, `File "x.py", line 3`, `at fn (file.js:10:5)`,
    `goroutine 1 [running]`, `panic:` with addresses, `panicked at`, `file.go:42` source locations.

Outcome (`judge_outcome`), on evidence in the trace only — the assistant's own words never count:
  1. `informational`: no edit was attempted (questions, reviews, research, planning). An edit is an
     Edit/Write/MultiEdit/NotebookEdit call outside scratch and plan folders, or a shell command that
     writes files (`sed -i`, `git apply`/`merge`/`restore`, linters with `--write`/`--fix`, `> file.ext`).
     Formatters (`gofmt`, `prettier`, `mix format`, `mise run fmt`, …) only re-lay code out: neither an
     edit nor a check. A command that writes and then checks (`sed -i … && go test`) is both, in order.
  2. Evidence is gathered only AFTER the last applied edit (a failed or declined edit is not applied;
     an edit to a prose file — markdown, text, docs/ — is the "last edit" only when no code was edited,
     so notes written after a verified fix do not erase the verification):
     - a check: a test, build, lint, type-check or run command (pytest, go test/build/vet, npm/pnpm/yarn
       test|build|run <script>, cargo, mix, make, tsc, ruff, mypy, gradle, …) at the start of a shell
       segment, behind any secrets or environment wrapper; a task runner's or package script's task named
       like a check (`turbo run typecheck`, `bun verify`); CI read back (`gh run view`, `gh pr checks`);
       any other command whose output is a test or lint report (`check_kinds`); it passes when it exited 0 (or with no error) and its output shows no failure marker
       (`FAIL`, `3 failed`, `Error: `, `panic: `, `npm ERR!`, …), since `| tail` hides exit codes;
     - a rerun: a command that failed (non-zero exit) before the last edit, run again verbatim and now
       exiting 0 (a rerun failing again is not counted: network or auth trouble says nothing of the fix);
     - the user's word in a later prompt: a confirmation ("works now", "that fixed it", "tests pass",
       "all green") without any complaint in the same prompt, or a denial ("still broken", "still
       failing", "doesn't work", "same error"). "thanks" or "great" alone is politeness, not evidence.
  3. The LAST piece of evidence decides: passing check / successful rerun / confirmation → `verified`;
     failing check / denial → `failed`; no evidence after the last edit → `unverified`.
  4. A passing last piece is overruled when it does not exercise the work: the user asked for more after
     it and the change that followed was declined → `unverified`; a test failed and the edits since only
     touch logging, prints or comments, with no test (nor the user) passing after them → `failed`; the
     last edit is CI configuration, checked only locally (no CI result read back with `gh run view` /
     `gh pr checks`, nor the user's word) → `unverified`.
  Hedged endings ("should work now", "this should fix it") are the assistant's claim and never count.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from episodic.distill.evidence import (
    CheckResult,
    Evidence,
    calls_before,
    check_result,
    evidence_after,
    is_ci_command,
    is_ci_config_edit,
    is_edit,
    is_formatter,
    is_test_command,
    last_edit_position,
    only_debug_edits,
    ordered_events,
    shell_command,
    tool_calls_in,
)
from episodic.distill.holes import hole_breaks
from episodic.distill.wording_rules import AnyOf, Rule, RuleSet, rule
from episodic.kernel.errors import InvalidCardError
from episodic.kernel.models import Card, Event, Outcome, ToolCall, Trajectory

if TYPE_CHECKING:
    import jsonschema

SOURCE_EXTENSIONS = (
    "py|pyi|go|js|jsx|mjs|cjs|ts|tsx|rs|rb|ex|exs|heex|eex|erl|java|kt|kts|scala|c|h|cc|cpp|hpp|cs|swift"
    "|m|mm|php|sh|bash|zsh|ps1|sql|yml|yaml|toml|json|jsonl|lock|md|mdx|txt|cfg|ini|conf|env|html|htm|css"
    "|scss|sass|less|vue|svelte|dart|lua|pl|gradle|xml|proto|tf|mod|sum|ipynb|graphql|prisma|zig|nim|clj"
)

_URL_RE = re.compile(r"\b(?:https?|ftp|file|s3|git|ssh)://\S+", re.I)

# Each alternative with its own trigger: most texts hold "(" or "=" but not ":=" or "::" (speed).
_CODE_EXPRESSION = AnyOf(
    (r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\(", ("(",)),
    (r"\b[A-Za-z_]\w*\.[A-Za-z_]\w*\([^)\n]*[,'\"=][^)\n]*\)", ("(",)),
    (r"\)\.[A-Za-z_]\w*\(", (").",)),
    (r"\b\w+\s*:=\s*\S", (":=",)),
    (r"\b(?:const|let|var)\s+\w+\s*=\s*\S", ("=",)),
    (r"=>\s*\{", ("=>",)),
    (r"\b\w+(?:::\w+){2,}", ("::",)),
)
_STACK_TRACE = AnyOf(
    (r"Traceback \(most recent call last\)", ("Traceback",)),
    (r"File \"[^\"\n]+\", line \d+", ('File "',)),
    (r"goroutine \d+ \[", ("goroutine",)),
    (r"\bat\s+[\w.$<>\[\]]+\s*\([^()\n]*:\d+(?::\d+)?\)", ("(",)),
    (r"panicked at", ("panicked at",)),
    (r"\bpanic:[^\n]*0x[0-9a-fA-F]{4,}", ("panic:",)),
    (r"^\s+at\s+[\w.$]+\([\w$]+\.java:\d+\)", (".java:",)),
    (r"\[signal SIG\w+", ("[signal SIG",)),
)

# (kind, pattern, triggers): a pattern runs only when one of its trigger substrings is present (speed).
_RULES: tuple[tuple[str, re.Pattern[str] | AnyOf, tuple[str, ...]], ...] = (
    ("code block", re.compile(r"```|~~~"), ("```", "~~~")),
    ("code", re.compile(r"[{}][^\n]*;|;[^\n]*[{}]"), (";",)),
    (
        "code definition",
        re.compile(
            r"\b(?:def|func|fn)\s+\w+\s*[\[(<]|\bfunc\s+\(\w+\s+\*?\w+\)|\bfunction\s+\w+\s*\("
            r"|\bclass\s+[A-Z]\w*\s*(?:\(|:|\{|extends\b|implements\b)|\bdefmodule\s+[A-Z]"
        ),
        ("(", "{", "[", "<", "defmodule"),
    ),
    (
        "import statement",
        re.compile(
            r"(?m)^\s*(?:import\s+(?:[\w.]+\s*$|[\w.]+\s+as\s+\w|\{|\*|\(|\"[\w./-]+\"|\w+\s+from\s+['\"])"
            r"|from\s+[\w.]+\s+import\s+[\w*(]|#include\s*[<\"]|using\s+[\w.]+;|use\s+[\w:]+::)"
            r"|\brequire\(\s*['\"]"
        ),
        ("import", "#include", "using ", "use ", "require("),
    ),
    (
        "shell pipeline",
        re.compile(
            r"\|\s*(?:grep|egrep|rg|head|tail|sed|awk|xargs|sort|uniq|wc|jq|tee|cut|tr|less)\b"
            r"|\d>&\d|\$\([^)\n]*\)|\s&&\s[^\n]*\s--?[\w-]+"
        ),
        ("|", ">&", "$(", "&&"),
    ),
    ("code expression", _CODE_EXPRESSION, _CODE_EXPRESSION.triggers),
    ("stack trace", _STACK_TRACE, _STACK_TRACE.triggers),
    ("source location", re.compile(rf"\b[\w-]+\.(?:{SOURCE_EXTENSIONS}):\d+\b"), (":",)),
    (
        "file path",
        re.compile(r"(?:^|(?<=[\s(\[{\"'`=,]))(?:~|\$HOME|\.{1,2})?/(?:[\w.@+-]+/)+[\w.@+-]*|~/[\w.@+-]+"),
        ("/",),
    ),
    ("file path", re.compile(r"\b[A-Za-z]:\\[\w.\\ -]+|\\\\[\w.-]+\\"), ("\\",)),
    (
        "file path",
        re.compile(rf"(?<![\w/.-])[\w.@+-]+/(?:[\w.@+-]+/)*[\w@+-]+\.(?:{SOURCE_EXTENSIONS})\b"),
        ("/",),
    ),
)


def text_violations(field: str, text: str) -> list[str]:
    """Every rule one text breaks, as "field: kind: 'snippet'"."""
    if not text:
        return []
    return [f"{field}: {kind}: {snippet!r}" for kind, snippet in rule_breaks(text)]


@lru_cache(maxsize=8192)
def rule_breaks(text: str) -> tuple[tuple[str, str], ...]:
    """(kind, snippet) for every rule the text breaks; cached: a card item is checked several times."""
    found: list[tuple[str, str]] = []
    scanned = _URL_RE.sub(" ", text) if "://" in text else text
    seen: set[str] = set()
    for kind, pattern, triggers in _RULES:
        if kind in seen:
            continue
        for trigger in triggers:  # a plain loop: cheaper than any() over a generator
            if trigger in scanned:
                break
        else:
            continue
        match = pattern.search(scanned)
        if match:
            seen.add(kind)
            snippet = match.group(0).strip() or scanned[max(0, match.start() - 10) : match.end() + 10]
            found.append((kind, snippet[:60]))
    return tuple(found)


def card_fields(card: Card) -> list[tuple[str, str]]:
    """(field name, text) for every text the card holds, list items as `steps[2]`."""
    pairs: list[tuple[str, str]] = [("problem", card.problem), ("insight", card.insight)]
    for name in ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks", "tags"):
        pairs += [(f"{name}[{i}]", item) for i, item in enumerate(getattr(card, name))]
    return pairs


def card_violations(card: Card) -> list[str]:
    """Code, file paths and stack traces anywhere in the card; each names the field and the snippet."""
    violations: list[str] = []
    for field, text in card_fields(card):
        violations += text_violations(field, text)
    return violations


# Conversational text, not a statement: what a transcript says in passing, never what a card states.
CHATTER_RULES: tuple[Rule, ...] = (
    rule(
        "interjection",
        r"(?i)^\W*(?:perfect|great|excellent|awesome|good|nice|ok|okay|alright|sure|yes|yep|hmm+|wait|ah|oh|wow"
        r"|done|got it|cool|interesting|understood|absolutely|exactly|right|good news|summary)\s*[!.,:;—–-](?!\w)",
    ),
    rule(
        "narrative opener",
        r"(?i)^\W*(?:now|so|also|then|finally|next,|first,|here'?s|here is|here are|let me|let'?s|great|perfect)\b(?![.-]\w)",
    ),
    rule(
        "first person",
        r"\b(?:I|I'm|I'll|I've|I'd|[Ll]et me|[Ll]et'?s|[Ww]e'll|[Ww]e'?re going to|[Ww]e need to|[Ww]e can|[Mm]y)\b",
    ),
    rule(
        "addressed to the user",
        r"(?i)\b(?:would you like|do you want|shall I|should I|want me to|let me know|can you|could you|you can now"
        r"|feel free)\b",
    ),
    rule("exclamation", r"!(?:\s|$)"),
    rule("table row", r"\|[^|\n]*\|"),
    rule("presentation", r"(?i)\bhere(?:'s| is| are)\b"),
    rule("question", r"\?\W*$"),
    rule("trailing colon", r":\W*$"),
    rule("truncated", r"(?:…|\.\.\.)\W*$"),
    rule(
        "to-do",
        r"(?i)^\W*(?:todo|to do|need to|needs to|still need|next step|remaining|will now|going to|about to"
        r"|if (?:it|this|that) (?:still|doesn'?t|does not|fails))\b",
    ),
    rule(
        "tool narration",
        r"(?i)^\W*(?:running|checking|looking at|reading|searching|viewing|opening|listing|waiting)\b"
        r"|\b(?:tool call|the output (?:shows|says)|as shown above|see above|see below)\b",
    ),
    rule(
        "vague reference",
        r"(?i)^\W*(?:(?:so|and|but),? )?(?:that|this|it|which)(?:'s| is| was|n't| wasn'?t| isn'?t| didn'?t| did| does"
        r"|'s not| is not| was not) ?(?:it|that|the one|the case|all|right|correct|good|fine|wrong)?\W*$"
        r"|\b(?:so )?that wasn'?t it\b",
    ),
    rule("connective start", r"(?i)^\W*(?:and|but|or|because|which|though|however|although)\b"),
)
_CHATTER = RuleSet(CHATTER_RULES)  # one pass for the words of all of them
MIN_STATEMENT_WORDS = 4  # fewer words is a fragment, not a statement
CHATTER_FIELDS = ("insight", "key_decisions", "dead_ends", "misleading_intuitions")


@lru_cache(maxsize=8192)  # a candidate statement is checked when chosen and again on the card
def chatter_breaks(text: str) -> tuple[str, ...]:
    """The names of the chatter rules one statement breaks (a fragment of few words is one too)."""
    found = [r.name for r in _CHATTER.matching(text)]
    if text and len(text.split()) < MIN_STATEMENT_WORDS:
        found.append("fragment")
    return tuple(found)


def chatter_violations(card: Card) -> list[str]:
    """Conversational text in the card's statement fields (insight, decisions, dead ends, intuitions).

    Enforced on every heuristic card (an LLM's card is free prose and is not held to it)."""
    found: list[str] = []
    for field, text in card_fields(card):
        if field.split("[", 1)[0] in CHATTER_FIELDS and text:
            found += [f"{field}: chatter: {name}: {text[:60]!r}" for name in chatter_breaks(text)]
    return found


def judge_outcome(traj: Trajectory) -> Outcome:
    """The outcome the trace supports (rules in the module docstring)."""
    events = ordered_events(traj)
    calls = tool_calls_in(events)  # walked once, read by each step below
    last_edit, attempted = last_edit_position(events, calls)
    if not attempted or last_edit is None:
        return Outcome.INFORMATIONAL
    evidence = evidence_after(events, last_edit, calls)
    if not evidence:
        return Outcome.UNVERIFIED
    if not evidence[-1].passed:
        return Outcome.FAILED
    if _declined_after(events, evidence[-1].position):
        return (
            Outcome.UNVERIFIED
        )  # the session ends on a change that was never applied: its request is undone
    if _debug_only_fix(calls, last_edit, evidence):
        return Outcome.FAILED
    edit = events[last_edit].tool
    ci_ran = any(
        e.kind == "user-confirm" or (e.kind == "check" and is_ci_command(e.detail)) for e in evidence
    )
    if edit is not None and is_ci_config_edit(edit) and not ci_ran:
        return Outcome.UNVERIFIED  # CI configuration is exercised by a CI run (read back, or the user's word)
    return Outcome.VERIFIED


def _declined_after(events: list[Event], position: int) -> bool:
    """After the deciding evidence the user asked for more, and the change that followed was never applied."""
    asked = False
    for event in events[position + 1 :]:
        if event.kind == "prompt":
            asked = True
        elif asked and event.tool is not None and is_edit(event.tool):
            return event.tool.rejected or event.tool.is_error
    return False


def _debug_only_fix(calls: list[tuple[int, ToolCall]], last_edit: int, evidence: list[Evidence]) -> bool:
    """A test failed; the edits since only touch logging or prints; no test (nor the user) passed after."""
    failed_test = max(
        (
            at
            for at, call in calls_before(calls, last_edit)
            if check_result(call) is CheckResult.FAILED and is_test_command(shell_command(call))
        ),
        default=None,
    )
    if failed_test is None:
        return False
    if any((e.kind == "check" and is_test_command(e.detail)) or e.kind == "user-confirm" for e in evidence):
        return False
    return only_debug_edits([call for at, call in calls if failed_test < at <= last_edit])


def enforce_card(card: Card, traj: Trajectory | None) -> tuple[Card, list[str]]:
    """Raise InvalidCardError on rule violations; downgrade an unsupported `verified` (never upgrade)."""
    violations = card_violations(card)
    if violations:
        raise InvalidCardError(
            "card breaks the card rules (no code, paths or stack traces): " + "; ".join(violations)
        )
    notes: list[str] = []
    if card.outcome is Outcome.VERIFIED:
        if traj is None:
            card = card.model_copy(update={"outcome": Outcome.UNVERIFIED})
            notes.append(
                "outcome downgraded verified -> unverified: no trajectory to check the claim against"
            )
        else:
            judged = judge_outcome(traj)
            if judged is not Outcome.VERIFIED:
                card = card.model_copy(update={"outcome": judged})
                notes.append(
                    f"outcome downgraded verified -> {judged.value}: no passing evidence after the last edit"
                )
    return card, notes


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # on first use: every `episodic` command imports this module, few validate a card

    schema = Card.json_schema()
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    return validator_cls(schema)


_FENCE_RE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", re.S)


def _decode(payload: str) -> Any:
    text = payload.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidCardError("card is not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as first_error:
        return _decode_embedded(text, first_error)
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
        raise InvalidCardError(f"card is not valid JSON: {str(exc)[:120]}") from None


def _decode_embedded(text: str, first_error: json.JSONDecodeError) -> Any:
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:  # prose around one JSON object ("Here is the card: {...}")
        try:
            return json.loads(text[start : end + 1])
        except (ValueError, RecursionError):
            pass
    raise InvalidCardError(
        f"card is not valid JSON: {first_error.msg} at line {first_error.lineno}"
    ) from None


def parse_card_payload(payload: str | dict[str, Any]) -> Card:
    """A card from JSON text (a ```json fence tolerated) or a dict; schema-checked, then pydantic-checked.

    The error message is short and specific, fit to feed back to an LLM in one repair attempt."""
    data = _decode(payload) if isinstance(payload, str) else payload
    if not isinstance(data, dict):
        raise InvalidCardError(f"card must be a JSON object, got {type(data).__name__}")
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        described = []
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            described.append(f"at {where}: {error.message[:160]}")
        more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
        raise InvalidCardError("card does not match the schema: " + "; ".join(described) + more)
    try:
        return Card.model_validate(data)
    except ValidationError as exc:
        described = [f"at {'/'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
        raise InvalidCardError("card is invalid: " + "; ".join(described)) from None


_CHECK_NAME = re.compile(r"^(?:Final check: )?(?P<name>.+?)(?::| passed| failed|,|$)")


def hole_violations(card: Card) -> list[str]:
    """Holes (distill.holes) in any field of a card, and a formatter run shown as a check; each names the
    field."""
    found = [
        f"{field}: hole: {name}: {text[:70]!r}"
        for field, text in card_fields(card)
        for name in hole_breaks(text)
    ]
    for check in card.critical_checks:
        match = _CHECK_NAME.match(check)
        if match and is_formatter(match.group("name")):
            found.append(f"critical_checks: a formatter run is not a check: {check[:70]!r}")
    return found
