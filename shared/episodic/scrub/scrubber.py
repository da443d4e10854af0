"""The scrubber: one pass over a text that finds every trigger literal and redacts what the rules at each hit find.

One search finds the trigger literals of every rule (token prefixes such as `AKIA`/`ghp_`/`eyJ`/`-----BEGIN`,
`://`, `Authorization`, `Bearer`, secret words such as `password` or `KEY`: `engine`, Hyperscan where its
wheel exists, else Aho-Corasick), then one anchored regex runs per hit (`rules`, `catalogue`, `positions`) and
`NAME=value` pairs are judged on the name's words and the value (`values`). Only the secret is replaced; the
name, quotes, scheme, user and host stay; git SHAs, hashes, UUIDs, tool ids and base64 data that hides no
secret are left alone. Scrubbing never raises and is idempotent. Why one pass: docs/security.md.

Over 450 lines: the one pass (trigger search, rule dispatch, overlap resolution, redaction) is one hot loop
kept in one module for speed (scripts/bench_scrub.py); the rules, values, companions and engine are apart.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from episodic.kernel.errors import ConfigError
from episodic.scrub.catalogue import catalogue_kinds, catalogue_rules
from episodic.scrub.companions import (
    BASE64_MARKS,
    BASE64_TEXT_MIN,
    QUERY_LITERALS,
    RUN_PATTERNS,
    aws_secret_near,
    base64_literals,
    base64_run,
    base64_runs,
    candidate_runs,
    decode_around,
    run_secrets,
    url_query_secret,
)
from episodic.scrub.engine import Group, TriggerSearch
from episodic.scrub.noseyparker import TRIGGER_CONTEXT, literal_rules, noseyparker_kinds
from episodic.scrub.positions import (
    COMMAND_LITERALS,
    PGPASS_LITERALS,
    command_password,
    fcm_server_key,
    netrc_password,
    pgpass_password,
    ppk_private_lines,
    telegram_bot_token,
    url_key_user,
)
from episodic.scrub.rules import (
    AUTHORIZATION_LITERALS,
    BEARER_LITERALS,
    KEYWORD_LENGTHS,
    KEYWORD_LITERALS,
    NAME_LITERALS,
    POSITION_TOKEN_RULES,
    TOKEN_RULES,
    Handler,
    Span,
    TokenRule,
    authorization_header,
    bearer_token,
    curl_user,
    keyword_assignment,
    starts_word,
    url_password,
)
from episodic.scrub.values import looks_secret, secret_kind_for_name

__all__ = ["KINDS", "Scrubber", "default_scrubber", "placeholder"]

KINDS: tuple[str, ...] = (
    "aws-access-key", "aws-secret-key", "github-token", "gitlab-token", "slack-token", "stripe-key",
    "openai-key", "anthropic-key", "google-api-key", "npm-token", "pypi-token", "huggingface-token",
    "sendgrid-key", "jwt", "private-key", "password", "bearer-token", "basic-auth", "secret", "custom",
    "episodic-token", "telegram-bot-token", "discord-bot-token", "firebase-fcm-key",
)  # fmt: skip
KINDS += tuple(kind for kind in catalogue_kinds() if kind not in KINDS)
KINDS += tuple(kind for kind in noseyparker_kinds() if kind not in KINDS)
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_KEYWORD = -1  # handler slot marker: keyword rules need the trigger length and a name cursor


def _BASE64(text: str, start: int) -> Span | None:
    return None


COMPANION_MIN_CHARS = 21
BARE_SECRET_MIN_CHARS = 40
DANGLING_REACH = 300  # a token's head at a text's end is looked for this far back
MAX_REREADS = 8  # keeps a text of glued tokens linear: each reread costs one token's length
MAX_BASE64_DEPTH = 2
RUNS_SEARCHED_BELOW = 4096  # base64 runs: Hyperscan's candidates in shorter texts, the walk in longer ones (engine)  # base64 of base64 of a secret; deeper nesting is not looked into


def _url_credentials(text: str, start: int) -> Span | None:
    return url_password(text, start) or url_key_user(text, start)


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _build_triggers() -> tuple[list[str], list[Handler | None]]:
    literals: list[str] = []
    handlers: list[Handler | None] = []
    for trigger_literals, rule in TOKEN_RULES:
        for literal in trigger_literals:
            literals.append(literal)
            handlers.append(rule)
    for literal, handler in (
        *((lit, authorization_header) for lit in AUTHORIZATION_LITERALS),
        *((lit, bearer_token) for lit in BEARER_LITERALS),
        ("://", _url_credentials),
        ("curl ", curl_user),
    ):
        literals.append(literal)
        handlers.append(handler)
    for literal in KEYWORD_LITERALS:
        literals.append(literal)
        handlers.append(None)
    return literals, handlers


def _build_companion_triggers() -> tuple[list[str], list[Handler | None]]:
    """Triggers of texts of COMPANION_MIN_CHARS or more: unlabelled secrets and the catalogue's provider formats."""
    literals: list[str] = [*QUERY_LITERALS]
    handlers: list[Handler | None] = [url_query_secret] * len(QUERY_LITERALS)
    for literal in base64_literals():
        literals.append(literal)
        handlers.append(_BASE64)
    for trigger_literals, rule in catalogue_rules():
        literals += trigger_literals
        handlers += [rule] * len(trigger_literals)
    return literals, handlers


def _build_position_triggers() -> tuple[list[str], list[Handler | None]]:
    """Triggers of credentials found by position (see `positions`) and of the further secret-name words,
    in an automaton of their own for texts of any length."""
    literals: list[str] = []
    handlers: list[Handler | None] = []
    for trigger_literals, rule in POSITION_TOKEN_RULES:
        literals += trigger_literals
        handlers += [rule] * len(trigger_literals)
    for literal, handler in (
        *((lit, command_password) for lit in COMMAND_LITERALS),
        ("machine", netrc_password),
        *((lit, pgpass_password) for lit in PGPASS_LITERALS),
        (":AA", telegram_bot_token),
        (":APA91b", fcm_server_key),
        ("Private-Lines:", ppk_private_lines),
    ):
        literals.append(literal)
        handlers.append(handler)
    for literal in NAME_LITERALS:
        literals.append(literal)
        handlers.append(None)
    return literals, handlers


def _keyword_lengths(literals: list[str]) -> list[int]:
    """Per literal, the length of the secret word a keyword trigger stands for (`token"` is `token`), else 0."""
    return [KEYWORD_LENGTHS.get(literal, 0) for literal in literals]


_REJECTS = {
    literal: rejected for literal, rejected in {**KEYWORD_LITERALS, **NAME_LITERALS}.items() if rejected
}


class _Triggers:
    """The built-in rules' trigger search and its handlers: the same for every scrubber (per engine), built at the
    first scrub, once a process (see `_triggers`). One search, four groups of literals (see `engine`): the built-in
    rules', the companions' and provider formats' (long texts), the position rules' and the generated catalogue's
    (long texts, any case)."""

    def __init__(self, engine: str) -> None:
        literals, handlers = _build_triggers()
        companions, companion_handlers = _build_companion_triggers()
        positions, position_handlers = _build_position_triggers()
        lowered = literal_rules()
        self.handlers = (
            handlers + companion_handlers + position_handlers + [handler for _, handler in lowered]
        )
        self.keyword_lengths = _keyword_lengths(literals + companions + positions) + [0] * len(lowered)
        groups = [
            Group(tuple(literals), rejects={lit: _REJECTS[lit] for lit in literals if lit in _REJECTS}),
            Group(tuple(companions), long_only=True),
            Group(tuple(positions), rejects={lit: _REJECTS[lit] for lit in positions if lit in _REJECTS}),
            Group(
                tuple(literal for literal, _ in lowered),
                any_case=True,
                long_only=True,
                contexts=TRIGGER_CONTEXT,
            ),
        ]
        self.search = TriggerSearch(groups, COMPANION_MIN_CHARS, engine, RUN_PATTERNS, RUNS_SEARCHED_BELOW)


@functools.cache
def _triggers(engine: str) -> _Triggers:
    # at the first scrub, not when a scrubber is made: a memory that serves `show` or `history` never scrubs
    return _Triggers(engine)


class Scrubber:
    """Replaces secrets in text and JSON-like values with typed placeholders; never raises."""

    def __init__(
        self, extra_patterns: Sequence[str] = (), *, accelerated: bool = True, engine: str | None = None
    ) -> None:
        """`engine`: "hyperscan", "ahocorasick" or "python" (see `engine`); by default the fastest installed, or
        "python" when not `accelerated`. Every engine finds the same secrets."""
        self._custom: list[re.Pattern[str]] = []
        for pattern in extra_patterns:
            try:
                compiled = re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise ConfigError(f"invalid scrub pattern {pattern!r}: {exc}") from exc
            if compiled.match(""):
                raise ConfigError(f"invalid scrub pattern {pattern!r}: it matches the empty string")
            self._custom.append(compiled)
        self.internal_errors = 0  # texts dropped whole because a rule failed (tests keep this at 0)
        self._base64_depth = 0
        self._engine = engine or ("auto" if accelerated else "python")
        self._built: _Triggers | None = None

    @property
    def _t(self) -> _Triggers:
        if self._built is None:
            self._built = _triggers(self._engine)
        return self._built

    @classmethod
    def from_settings(cls, settings: Any) -> Scrubber:
        """The scrubber for `Settings.scrub_patterns` (user regexes, redacted as [REDACTED:custom])."""
        return _scrubber_for(tuple(settings.scrub_patterns))

    @property
    def accelerated(self) -> bool:
        return self.engine != "python"

    @property
    def engine(self) -> str:
        """The trigger search in use: "hyperscan", "ahocorasick" or "python"."""
        return self._t.search.engine

    def scrub(self, text: str, *, key: str | None = None) -> str:
        return self.scrub_counted(text, key=key)[0]

    def scrub_counted(self, text: str, *, key: str | None = None) -> tuple[str, dict[str, int]]:
        """The scrubbed text and how many secrets of each kind were replaced.

        `key` is the name the text is the value of (a dict key, an env variable), if any: a whole
        value under a secret-looking name (`DB_PASSWORD`, `apiKey`) is redacted when it looks secret.
        """
        counts: dict[str, int] = {}
        if not isinstance(text, str) or not text:
            return text, counts
        try:
            if key is not None and isinstance(key, str):
                whole = self._whole_value(key, text)
                if whole is not None:
                    return placeholder(whole), {whole: 1}
            spans = self._spans(text)
            if spans and "[REDACTED:" in text:
                spans = _outside_placeholders(text, spans)
            if spans:
                text = self._apply(text, spans, counts)
            if self._custom:
                text = self._apply_custom(text, counts)
        except Exception:  # never let a scrubber bug leak text or break ingestion: drop it whole
            self.internal_errors += 1
            return placeholder("secret"), {"secret": 1}
        return text, counts

    def scrub_field(self, text: str, limit: int) -> str:
        """A free-text field a person or tool writes (a review reason, a link's cwd): stripped, scrubbed,
        then cut to `limit` characters, never inside a placeholder (a cut before scrubbing could halve a
        token so that no rule finds it)."""
        clean = self.scrub((text or "").strip()[: 4 * limit])
        if len(clean) <= limit:
            return clean
        opened = clean.rfind("[REDACTED:", 0, limit)
        cut = opened if opened >= 0 and clean.find("]", opened) >= limit else limit
        return clean[:cut].rstrip()

    def scrub_obj(self, obj: Any) -> Any:
        return self.scrub_obj_counted(obj)[0]

    def scrub_obj_counted(self, obj: Any) -> tuple[Any, dict[str, int]]:
        """A new JSON-like value (dict/list/tuple/str, others as they are) with every string scrubbed."""
        counts: dict[str, int] = {}
        return self._walk(obj, None, counts, 0), counts

    def _walk(self, obj: Any, key: str | None, counts: dict[str, int], depth: int) -> Any:
        if isinstance(obj, str):
            clean, found = self.scrub_counted(obj, key=key)
            for kind, n in found.items():
                counts[kind] = counts.get(kind, 0) + n
            return clean
        if depth > 200:  # deeper than any real JSON: refuse to keep what was not looked at
            return placeholder("secret")
        if isinstance(obj, dict):
            return {
                self._walk(k, None, counts, depth + 1): self._walk(
                    v, k if isinstance(k, str) else None, counts, depth + 1
                )
                for k, v in obj.items()
            }
        if isinstance(obj, list | tuple):
            items = [self._walk(v, key, counts, depth + 1) for v in obj]
            return items if isinstance(obj, list) else tuple(items)
        return obj

    def _whole_value(self, key: str, value: str) -> str | None:
        kind = secret_kind_for_name(key, value)
        if kind is None or len(value) > 4096 or any(c.isspace() for c in value):
            return None
        return kind if looks_secret(value, kind) else None

    def _spans(self, text: str) -> list[Span]:
        t = self._t
        # one byte a character (non-ASCII ones become `?`, lone surrogates too): offsets need no mapping, and
        # every literal and pattern is ASCII
        data = text.encode("ascii", "replace")
        hits, starts = t.search.scan(text, data)
        spans: list[Span] = []
        if len(text) >= BASE64_TEXT_MIN and (starts is None or starts):
            if starts is None:  # no Hyperscan: every run of the length any rule needs, the slow way
                runs = base64_runs(data, data.translate(BASE64_MARKS))
            else:
                runs = candidate_runs(data, starts)
            if runs:
                bare = len(text) >= BARE_SECRET_MIN_CHARS
                decode = self._base64_depth < MAX_BASE64_DEPTH
                found, texts = run_secrets(text, data, runs, bare=bare, decode=decode)
                spans += found
                if texts:
                    spans += self._base64_text_secrets(texts)
        if not hits:
            return spans
        handlers = t.handlers
        keyword_lengths = t.keyword_lengths
        # triggers inside a value or token already read are skipped, a token's only by its own rule: one rule
        # never hides another's token (a JWT joined across a break once hid the PEM block after it)
        keyword_done = token_done = -1
        rule_done: dict[int, int] = {}
        reread = (
            0  # a token's own rule reads a hit inside its last token again, this many times a text at most
        )
        for (
            start,
            index,
            _end,
        ) in hits:  # a keyword's next characters were checked by the search (Group.rejects)
            handler = handlers[index]
            if handler is None:
                if start < keyword_done:
                    continue
                span, keyword_done = keyword_assignment(text, start, keyword_lengths[index])
            elif isinstance(handler, TokenRule):
                if start < rule_done.get(id(handler), -1):
                    # `tok=tok`: a value alphabet with `=` ran into the next token, which starts a word
                    if handler.glued or reread >= MAX_REREADS or not starts_word(text, start):
                        continue
                    reread += 1
                span = handler(text, start)
                if span is not None:
                    rule_done[id(handler)] = token_done = span[1]
                    if span[2] == "aws-access-key":  # its secret often sits beside it with no name
                        spans.extend(aws_secret_near(text, span[0], span[1]))
                elif len(text) - start <= DANGLING_REACH:  # the text may end on a token's head
                    span = handler.dangling(text, start, _end - start)
            elif handler is _BASE64:
                if start < token_done:
                    continue
                span = self._base64_secret(text, start, _end)
                if span is not None:
                    token_done = span[1]
            else:
                span = handler(text, start)
            if span is not None:
                spans.append(span)
        return spans

    def _base64_text_secrets(self, runs: list[tuple[int, int, str]]) -> list[Span]:
        """Whole base64 runs whose decoded text holds a secret the rules find."""
        spans: list[Span] = []
        for start, end, decoded in runs:
            self._base64_depth += 1
            try:
                found = self._spans(decoded)
            finally:
                self._base64_depth -= 1
            if found:
                best = min(found, key=lambda span: span[3])
                spans.append((start, end, best[2], best[3]))
        return spans

    def _base64_secret(self, text: str, start: int, end: int) -> Span | None:
        """The whole base64 run around a hit when its decoded text holds a secret the rules find."""
        if self._base64_depth >= MAX_BASE64_DEPTH:
            return None
        run_start, run_end = base64_run(text, start, end)
        decoded = decode_around(text, run_start, run_end, start)
        if decoded is None:
            return None
        self._base64_depth += 1
        try:
            found = self._spans(decoded)
        finally:
            self._base64_depth -= 1
        if not found:
            return None
        best = min(found, key=lambda span: span[3])
        return run_start, run_end, best[2], best[3]

    @staticmethod
    def _apply(text: str, spans: list[Span], counts: dict[str, int]) -> str:
        # overlapping finds merge into one redaction covering all of them, named by the best rank:
        # dropping one instead could leave a secret that the next scrub would find (not idempotent)
        spans.sort(key=lambda s: (s[0], -s[1]))
        merged: list[Span] = []
        for start, end, kind, rank in spans:
            if end <= start:
                continue
            if merged and start < merged[-1][1]:
                m_start, m_end, m_kind, m_rank = merged[-1]
                best = (m_kind, m_rank) if m_rank <= rank else (kind, rank)
                merged[-1] = (m_start, max(m_end, end), *best)
            else:
                merged.append((start, end, kind, rank))
        pieces: list[str] = []
        cursor = 0
        for start, end, kind, _rank in merged:
            pieces.append(text[cursor:start])
            pieces.append(placeholder(kind))
            counts[kind] = counts.get(kind, 0) + 1
            cursor = end
        pieces.append(text[cursor:])
        return "".join(pieces)

    def _apply_custom(self, text: str, counts: dict[str, int]) -> str:
        for pattern in self._custom:
            group = 1 if pattern.groups else 0
            spans: list[Span] = [(*m.span(group), "custom", 0) for m in pattern.finditer(text)]
            spans = _outside_placeholders(text, spans)
            if spans:
                text = self._apply(text, spans, counts)
        return text


def _outside_placeholders(text: str, spans: list[Span]) -> list[Span]:
    """Drop spans touching a placeholder already in the text: scrubbing twice equals scrubbing once."""
    taken = [m.span() for m in PLACEHOLDER.finditer(text)]
    if not taken:
        return spans
    return [span for span in spans if not any(s < span[1] and span[0] < e for s, e in taken)]


@functools.cache
def _scrubber_for(patterns: tuple[str, ...]) -> Scrubber:
    return Scrubber(patterns)  # built once per pattern set: the trigger automaton is not free


def default_scrubber() -> Scrubber:
    """The shared scrubber with the built-in rules only."""
    return _scrubber_for(())
