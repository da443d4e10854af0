"""The rows generated from Nosey Parker's rule catalogue, loaded from `data/noseyparker_rules.json`.

`scripts/gen_scrub_catalogue.py` writes that file from a pinned copy of the catalogue, mechanically: each
rule's pattern translated to Python, its trigger literals (lower case: they are searched in the lower-cased
text), its capture groups and its window. Here each literal becomes one handler that runs the patterns of its
rules in a window around the hit; the last capture group that is not a host name is redacted (the user and
host of a connection string stay, as the built-in rules leave them).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from episodic.scrub.rules import Span
from episodic.scrub.values import is_placeholder

RANK_CATALOGUE = 3  # where a built-in rule finds the same secret, its kind names the placeholder


@dataclass(frozen=True)
class CatalogueRule:
    rule_id: str
    kind: str
    pattern: re.Pattern[str]
    groups: int  # capture groups: the secret is the last that is not a host name (see secret_span)
    window: int  # how far after its trigger a match may end
    back: int  # how far before its trigger a match may start


@dataclass(frozen=True)
class LiteralRules:
    """The rules a trigger literal stands for, and those of the literals inside it (a leftmost search reports
    `blynk.cloud/oauth2/` and not the `blynk.cloud/oauth2` it holds): called at a hit, returns the first
    secret found."""

    rules: tuple[CatalogueRule, ...]
    inner: tuple[tuple[int, tuple[CatalogueRule, ...]], ...] = ()  # (offset in the literal, rules)

    def __call__(self, text: str, start: int) -> Span | None:
        found = _first_secret(self.rules, text, start)
        for offset, rules in self.inner:
            if found is not None:
                break
            found = _first_secret(rules, text, start + offset)
        return found


UNESCAPE_LEVELS = 3  # a literal `\\n` in a tool's output, JSON-escaped in a transcript, escaped again raw
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/"}


def _unescaped(window: str) -> tuple[str, list[int] | None]:
    """The window with JSON escapes decoded (`\\n`, `\\"`: a transcript's escaped tool output), so that a rule's
    `\\b`, `\\s` or `"` sees what they stand for, and where each of its characters was (None: unchanged)."""
    if "\\" not in window:
        return window, None
    chars: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(window):
        c = window[i]
        if c == "\\" and i + 1 < len(window) and window[i + 1] in _ESCAPES:
            chars.append(_ESCAPES[window[i + 1]])
            where.append(i)
            i += 2
            continue
        chars.append(c)
        where.append(i)
        i += 1
    where.append(len(window))
    return "".join(chars), where


def _first_secret(rules: tuple[CatalogueRule, ...], text: str, start: int) -> Span | None:
    for rule in rules:
        low = max(0, start - rule.back)
        window, where = _unescaped(text[low : min(len(text), start + rule.window)])
        # escaped again (a JSON string inside a JSON string, whose text had a literal `\n`): each level decoded
        for _ in range(UNESCAPE_LEVELS - 1):
            if where is None or "\\" not in window:
                break
            window, again = _unescaped(window)
            if again is None:
                break
            where = [where[i] for i in again]
        at = start - low if where is None else where.index(start - low) if start - low in where else -1
        for match in rule.pattern.finditer(window):
            if at >= 0 and (match.start() > at or match.end() <= at):
                continue  # this hit's literal is not in it: another hit will find it
            begin, end = secret_span(match, rule.groups)
            if end - begin < 4 or is_placeholder(window[begin:end]):
                continue
            if where is not None:
                begin, end = where[begin], where[end]
            return low + begin, low + end, rule.kind, RANK_CATALOGUE
    return None


def secret_span(match: re.Match[str], groups: int) -> tuple[int, int]:
    """The secret in a rule's match: its last capture group that is not a host (`@` before it, as in
    `user:password@host`), else its last group, else the whole match; only the secret goes."""
    found = [g for g in range(1, groups + 1) if match.group(g)]
    for group in reversed(found):
        if match.string[match.start(group) - 1 : match.start(group)] != "@":
            return match.span(group)
    return match.span(found[-1]) if found else match.span()


# What must follow a trigger literal for its rules to match at all, read from their patterns: these
# literals fire thousands of times over the shared transcripts (`github` 31,444 times, in prose and URLs) and each
# hit ran the rules' regexes in a window. The search reports a hit only with its context (`engine.Group.contexts`);
# a context is a necessary condition, so nothing a rule finds is lost (each rule's examples are checked).
TRIGGER_CONTEXT: dict[str, str] = {
    "github": r".?(?:api|app|application|client|consumer|customer|secret|key)",  # np.github.6
    "ghs": r"_[a-z0-9]{36}", "ghu": r"_[a-z0-9]{36}",  # np.github.3
    "-us": r"[0-9]",  # np.mailchimp.1
    "fc-": r"[a-f0-9]{32}",  # np.firecrawl.1
    "sg.": r"[0-9a-z_-]{22}\.",  # np.sendgrid.1
    "cio": r"[a-z0-9]{32}",  # np.cratesio.1
    "sk-": r"[a-z0-9]{48}",  # np.openai.1
    "_test_": r"[a-z0-9]{24}", "_live_": r"[a-z0-9]{24}",  # np.stripe.1, np.stripe.2
    **{literal: r"[a-z0-9]{16}" for literal in ("agpa", "aida", "aipa", "akia", "anpa", "anva", "aroa", "asia")},
    "a3t": r"[a-z0-9]{17}",  # np.aws.6
}  # fmt: skip


@cache
def _data() -> dict[str, Any]:
    raw = resources.files("episodic.scrub").joinpath("data/noseyparker_rules.json").read_text()
    return json.loads(raw)  # type: ignore[no-any-return]


def catalogue_source() -> dict[str, str]:
    return dict(_data()["source"])


def literal_rules() -> list[tuple[str, LiteralRules]]:
    """(lower-case trigger literal, the handler for its rules), one row per distinct literal, longest first:
    searched leftmost-first, where two start at one place the longer one is reported."""
    by_literal: dict[str, list[CatalogueRule]] = {}
    for row in _data()["rules"]:
        rule = CatalogueRule(
            row["id"], row["kind"], re.compile(row["pattern"]), row["groups"], row["window"], row["back"]
        )
        for literal in row["triggers"]:
            by_literal.setdefault(literal, []).append(rule)
    longest_first = sorted(by_literal, key=lambda literal: (-len(literal), literal))
    return [
        (
            literal,
            LiteralRules(
                tuple(by_literal[literal]),
                tuple(
                    (literal.find(other), tuple(by_literal[other]))
                    for other in longest_first
                    if other != literal and other in literal
                ),
            ),
        )
        for literal in longest_first
    ]


def noseyparker_kinds() -> tuple[str, ...]:
    return tuple(dict.fromkeys(row["kind"] for row in _data()["rules"]))
