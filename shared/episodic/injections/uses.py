"""What a session did with what it was given, read from its own transcript by deterministic rules
(docs/injections.md has each rule and its measured precision).

The moment: the user prompt the injection answered (the prompt nearest the record's time; for a failure
fix, the failing call nearest it). The window: that turn and the next one (up to the second user prompt
after the moment), so that a long session cannot cite everything by chance.

  opened  get_episode on the card's id (or a prefix of it) anywhere after the moment
  cited   the agent's reply in the window names the card's id, or two of its distinctive terms (identifiers,
          file names and commands in the card that the session had not used before the moment)
  acted   in the window, a check the card names is run, or (a failure fix) the check that failed runs again
          and passes; a file the card names touched in the window is noted (`touched:`) but is no use alone
Terms, files and checks that many of the tenant's cards name (`common_evidence`) never count: in one
codebase every session touches the same files and runs the same checks.
  ignored none of these
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from episodic.distill.evidence import (
    CheckResult,
    check_result,
    check_segment,
    ordered_events,
    shell_command,
)
from episodic.kernel.injection_port import InjectionRecord, Use
from episodic.kernel.models import Card, Event, Trajectory

WINDOW_PROMPTS = 2  # the receiving turn and the next one
ID_PREFIX = 8  # a pointer shows the first 8 characters of the id
MIN_CITED_TERMS = 2
MOMENT_SLACK = timedelta(minutes=10)  # a prompt this far from the record's time is not its moment
# evidence named by more than this share of the tenant's cards is the project's vocabulary, not the card's
COMMON_SHARE = 0.05
COMMON_MIN_CARDS = 3
# an identifier, a file name or a dotted/hyphenated name: words a reply does not use by chance
_TERM_RE = re.compile(
    r"\b(?:[A-Za-z_]\w*(?:(?:[._/:-]|::)\w+)+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}\w*[a-z]\w*|\w*_\w+)"
)
_FILE_RE = re.compile(
    r"\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|kt|rb|c|h|cpp|cs|swift|sh|toml|ya?ml|json|md|sql|proto|tf|css|html)\b"
)
_CODE_SPAN_RE = re.compile(r"`([^`]{3,120})`")
_COMMON_TERMS = frozenset({"e.g", "i.e", "etc", "node_modules", "package.json", "README.md"})


@dataclass
class Reading:
    """One record's use and every rule that matched (the detail names each: `cited:foo_bar,baz.go`)."""

    use: Use
    matched: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        return "; ".join(self.matched)[:400]


def card_text(card: Card) -> str:
    parts = [card.problem, card.insight, *card.steps, *card.key_decisions, *card.dead_ends]
    return "\n".join([*parts, *card.misleading_intuitions, *card.critical_checks])


def card_files(card: Card) -> set[str]:
    return {m.lower() for m in _FILE_RE.findall(card_text(card))}


def card_checks(card: Card) -> set[str]:
    """The checks a card names, as their heads (`go test`, `pytest`, `npm run lint`)."""
    heads = set()
    for text in [*card.critical_checks, *card.steps]:
        for span in [*_CODE_SPAN_RE.findall(text), text]:
            head = check_head(span)
            if head:
                heads.add(head)
    return heads


def check_head(command: str) -> str:
    """A check command's program and subcommand(s); '' when the text runs no check."""
    segment = check_segment(command.strip())
    words = [w for w in segment.split() if "=" not in w.split("/")[0] and not w.startswith("-")]
    return " ".join(words[: 3 if words[:1] in (["npm"], ["pnpm"], ["yarn"], ["mise"]) else 2]).lower()


def terms(text: str) -> set[str]:
    return {t.strip("._/:-").lower() for t in _TERM_RE.findall(text) if len(t) >= 4} - _COMMON_TERMS


def evidence_of(card: Card) -> set[str]:
    """Everything a rule may match a card by: its distinctive terms, the files and the checks it names."""
    return terms(card_text(card)) | card_files(card) | card_checks(card)


def common_evidence(cards: Iterable[Card]) -> frozenset[str]:
    """Terms, files and checks that many cards name (more than COMMON_SHARE of them, at least
    COMMON_MIN_CARDS): in one codebase every session touches `setup.go` and runs `go test`."""
    counts: Counter[str] = Counter()
    total = 0
    for card in cards:
        counts.update(evidence_of(card))
        total += 1
    bar = max(COMMON_MIN_CARDS, COMMON_SHARE * total)
    return frozenset(k for k, n in counts.items() if n > bar)


def _event_text(event: Event) -> str:
    if event.tool is None:
        return event.text
    return f"{shell_command(event.tool)} {event.tool.file_path or ''} {event.tool.input} {event.tool.output}"


def moment_of(events: Sequence[Event], record: InjectionRecord) -> int | None:
    """The position of the prompt (or, for a fix, the failing call) the record answered; None when the
    transcript has nothing near its time (a record of a part not written yet)."""
    wanted = "tool" if record.tier == "fix" else "prompt"
    best: tuple[timedelta, int] | None = None
    for position, event in enumerate(events):
        if event.kind != wanted or event.timestamp is None:
            continue
        if wanted == "tool" and (event.tool is None or check_result(event.tool) is not CheckResult.FAILED):
            continue
        gap = abs(event.timestamp - record.at)
        if gap <= MOMENT_SLACK and (best is None or gap < best[0]):
            best = (gap, position)
    return None if best is None else best[1]


def window_end(events: Sequence[Event], moment: int) -> int:
    seen = 0
    for position in range(moment + 1, len(events)):
        if events[position].kind == "prompt":
            seen += 1
            if seen == WINDOW_PROMPTS:
                return position
    return len(events)


def _opened(record: InjectionRecord, after: Sequence[Event]) -> str:
    for event in after:
        call = event.tool
        if call is None or not call.name.endswith("get_episode"):
            continue
        asked = str(call.input.get("session_id") or "").strip()
        if len(asked) >= ID_PREFIX and record.card_id.startswith(asked):
            return "opened:get_episode"
    return ""


def _cited(
    record: InjectionRecord,
    card: Card,
    before: Sequence[Event],
    window: Sequence[Event],
    common: frozenset[str],
) -> str:
    reply = "\n".join(e.text for e in window if e.kind == "assistant")
    if record.card_id[:ID_PREFIX] in reply:
        return "cited:id"
    known = terms("\n".join(_event_text(e) for e in before))
    distinctive = terms(card_text(card)) - known - common
    found = sorted(t for t in distinctive if t in terms(reply))
    return f"cited:{','.join(found[:5])}" if len(found) >= MIN_CITED_TERMS else ""


def _touched(card: Card, before: Sequence[Event], window: Sequence[Event], common: frozenset[str]) -> str:
    """A file the card names touched in the window: kept in the detail, never a use on its own (sessions of
    one component touch the same files whether or not they were given the card)."""
    earlier = {_base(e.tool.file_path) for e in before if e.tool is not None and e.tool.file_path}
    files = card_files(card) - earlier - common
    touched = sorted(
        {_base(e.tool.file_path) for e in window if e.tool is not None and e.tool.file_path} & files
    )
    return f"touched:file={touched[0]}" if touched else ""


def _acted(card: Card, before: Sequence[Event], window: Sequence[Event], common: frozenset[str]) -> str:
    calls = [e.tool for e in window if e.tool is not None]
    earlier = [e.tool for e in before if e.tool is not None]
    ran_before = {check_head(shell_command(c)) for c in earlier}
    checks = card_checks(card) - ran_before - common
    for call in calls:
        head = check_head(shell_command(call))
        if head and head in checks:
            return f"acted:check={head}"
    return ""


def _fix_held(before: Sequence[Event], window: Sequence[Event]) -> str:
    """A failure fix: the check that failed at the moment runs again in the window and passes."""
    failed = before[-1].tool if before and before[-1].tool is not None else None
    head = check_head(shell_command(failed)) if failed is not None else ""
    if not head:
        return ""
    for event in window:
        call = event.tool
        if (
            call is not None
            and check_head(shell_command(call)) == head
            and check_result(call) is CheckResult.PASSED
        ):
            return f"acted:passed={head}"
    return ""


def _base(path: str | None) -> str:
    return (path or "").replace("\\", "/").rsplit("/", 1)[-1].lower()


def read_use(
    record: InjectionRecord,
    card: Card | None,
    events: Sequence[Event],
    viewer_opened: bool = False,
    common: frozenset[str] = frozenset(),
) -> Reading | None:
    """The record's use by the rules, in order (opened, cited, acted); None when its moment is not in the
    transcript (not written yet, or another part of the session)."""
    moment = moment_of(events, record)
    if moment is None:
        return None
    end = window_end(events, moment)
    # the prompt (or the failing call) the record answered is known before it: the window starts after it
    before, window = events[: moment + 1], events[moment + 1 : end]
    after = events[moment:]
    matched: list[str] = []
    if viewer_opened:
        matched.append("opened:viewer")
    matched += [m for m in (_opened(record, after),) if m]
    if card is not None:
        found = (
            _cited(record, card, before, window, common),
            _acted(card, before, window, common),
            _touched(card, before, window, common),
        )
        matched += [m for m in found if m]
    if record.tier == "fix":
        matched += [m for m in (_fix_held(before, window),) if m]
    for use in ("opened", "cited", "acted"):
        if any(m.startswith(use) for m in matched):
            return Reading(use, matched)  # type: ignore[arg-type]
    return Reading("ignored", matched)


def read_session(
    records: Sequence[InjectionRecord],
    trajectory: Trajectory,
    card_of: Callable[[str], Card | None],
    viewer_opened: Callable[[InjectionRecord], bool] = lambda _r: False,
    common: frozenset[str] = frozenset(),
) -> dict[str, tuple[Use, str, str]]:
    """Every record's (use, detail, agent) by record id, for the records whose moment is in the transcript;
    `common`: the tenant's common evidence (`common_evidence`), never a match."""
    events = ordered_events(trajectory)
    uses: dict[str, tuple[Use, str, str]] = {}
    for record in records:
        reading = read_use(record, card_of(record.card_id), events, viewer_opened(record), common)
        if reading is not None:
            uses[record.record_id] = (reading.use, reading.detail, record.agent or trajectory.agent)
    return uses
