"""Text helpers for the parser: cutting long strings safely and removing Claude Code's noise from user text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from episodic.parse.injected import split_injected
from episodic.plumbing.marker import strip_injected
from episodic.scrub.companions import NEAR_KEY_ID_ENTROPY, redact_aws_secrets

# How far a cut edge may move to land on whitespace, so a cut never splits a token (a key, a path) in two.
_EDGE_SLACK = 200


class TextScrubber(Protocol):
    """The part of `episodic.scrub.Scrubber` the parser uses (structural, so tests may pass any scrubber)."""

    def scrub_counted(self, text: str, *, key: str | None = None) -> tuple[str, dict[str, int]]: ...


def cut_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of `text` within `limit` chars, cutting at whitespace when close by."""
    if limit <= 0 or len(text) <= limit:
        return text
    marker_room = 40
    keep = max(limit - marker_room, 2)
    head_end = keep // 2
    tail_start = len(text) - (keep - head_end)
    # move the edges onto whitespace so a secret is never half kept (the scrubber needs the whole token)
    space = max(
        text.rfind(" ", head_end - _EDGE_SLACK, head_end), text.rfind("\n", head_end - _EDGE_SLACK, head_end)
    )
    if space > 0:
        head_end = space
    candidates = [
        i
        for i in (
            text.find(" ", tail_start, tail_start + _EDGE_SLACK),
            text.find("\n", tail_start, tail_start + _EDGE_SLACK),
        )
        if i >= 0
    ]
    if candidates:
        tail_start = min(candidates) + 1
    removed = tail_start - head_end
    return f"{text[:head_end]}\n[… {removed} chars cut …]\n{text[tail_start:]}"


# a text ending on a placeholder, perhaps then blank space (real or escaped)
_ENDS_REDACTED = re.compile(r"\[REDACTED:([a-z0-9-]+)\](?P<gap>(?:\s|\\[nrt])*)\Z")
_ENDINGS = ("]", "\\n", "\\r", "\\t")
_LEADING_TOKEN = re.compile(r"[A-Za-z0-9/+=_.~-]{4,}")
# an AWS key id's rest is upper case and digits, and any of it is part of the id (`…AKIA…X` | `YZ`), after blank
# space or a quote (the id's last characters on the next line or message), and may be glued to a word (`XYis`)
_LEADING_KEY_ID = re.compile(r"(?:[ \t\r\n`'\"]|\\[nrt])*(?P<rest>[A-Z0-9]{1,16})(?![A-Z0-9])")
KEY_ID_KIND = "aws-access-key"
_PLAIN_WORD = re.compile(r"[A-Z]?[a-z]+[.,:;!?]?")


@dataclass
class ScrubCounter:
    """Scrubs text with the injected scrubber and adds up how many secrets of each kind it redacted.

    Texts come in session order: when one ends right on a redacted secret and the next starts with a
    token glued to it, that token is the secret's rest (a key split across two messages) and goes too.
    Once the session has shown an AWS access key id, later AWS-secret-shaped runs go on a looser shape.
    """

    scrubber: TextScrubber
    counts: dict[str, int] = field(default_factory=dict)
    _carry: str | None = None

    def __call__(self, text: str, limit: int = 0, key: str | None = None) -> str:
        if not text:
            return text
        if 0 < limit < len(text):
            text = cut_middle(text, limit)  # cut first: scrubbing a huge output in full is wasted work
        # `key` names the value (an env var, a dict key): a secret-looking name redacts a secret-looking value
        clean, found = self.scrubber.scrub_counted(text, key=key)
        for kind, n in found.items():
            self.counts[kind] = self.counts.get(kind, 0) + n
        return self.follow(clean)

    def follow(self, clean: str) -> str:
        """The session-wide pass over one scrubbed text: a split secret's rest, a paired AWS secret."""
        carried, self._carry = self._carry, None
        if carried:
            clean = self._redact_rest(clean, carried)
        if "aws-access-key" in self.counts:  # an access key id earlier in the session: its secret may follow
            clean, paired = redact_aws_secrets(clean, NEAR_KEY_ID_ENTROPY)
            if paired:
                self.counts["aws-secret-key"] = self.counts.get("aws-secret-key", 0) + paired
        # only a text ending in "]" or blank space can end on a placeholder: the others skip the scan (almost all)
        ending = None
        if clean.endswith(_ENDINGS) or clean[-1:].isspace():
            ending = _ENDS_REDACTED.search(clean, max(0, len(clean) - 256))
        # a key id's rest may follow blank space; another token's must be glued to its head
        carried_on = ending is not None and (not ending.group("gap") or ending.group(1) == KEY_ID_KIND)
        self._carry = ending.group(1) if ending and carried_on else None
        return clean

    def _redact_rest(self, clean: str, kind: str) -> str:
        if clean.startswith("[REDACTED:"):
            return clean
        if kind == KEY_ID_KIND:
            match = _LEADING_KEY_ID.match(clean)
            if match is None or clean.startswith("[REDACTED:", match.start("rest")):
                return clean
            rest = match.group("rest")
            if len(rest) == 1 and rest.isalpha() and clean[match.end() : match.end() + 1].islower():
                return clean  # `Then …`: a word's capital, not the id's last character
            start, end = match.start("rest"), match.end("rest")
        else:
            match = _LEADING_TOKEN.match(clean)
            if match is None or _PLAIN_WORD.fullmatch(match.group()):
                return clean
            start, end = 0, match.end()
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return clean[:start] + f"[REDACTED:{kind}]" + clean[end:]


# ------------------------------------------------------------------ user text noise

_SYSTEM_REMINDER_RE = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_NOISE_TAGS = (
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "task-notification",
    "command-message",
    "command-contents",
)
_NOISE_RE = re.compile(r"<(" + "|".join(_NOISE_TAGS) + r")>.*?(?:</\1>|\Z)", re.S)
_COMMAND_NAME_RE = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_INTERRUPT_RE = re.compile(r"^\[Request interrupted by user[^\]]*\]$")


@dataclass
class CleanText:
    text: str  # what is left to count as a prompt ("" when the entry was only noise)
    interrupt: str = ""  # the interrupt notice, when the entry was one
    injected_removed: int = 0


def clean_user_text(raw: str) -> CleanText:
    """Strip our injected memory, other tools' injected context (`parse.injected`), system reminders and command
    noise; keep slash commands with args."""
    text, injected = strip_injected(raw)
    text = split_injected(text)[1]  # an orchestrator's or agent's context block: not the user's words
    stripped = text.strip()
    if _INTERRUPT_RE.match(stripped):
        return CleanText("", interrupt=stripped, injected_removed=injected)
    if "<" not in text:
        return CleanText(stripped, injected_removed=injected)
    text = _SYSTEM_REMINDER_RE.sub("", text)
    if text.lstrip().startswith("<task-notification>"):
        return CleanText("", injected_removed=injected)  # a background task's notice and its boilerplate
    command = _COMMAND_NAME_RE.search(text)
    if command:
        args_match = _COMMAND_ARGS_RE.search(text)
        args = args_match.group(1).strip() if args_match else ""
        name = command.group(1).strip()
        # a slash command is a prompt only when it carries arguments (`/fix the login bug`)
        return CleanText(f"{name} {args}".strip() if args else "", injected_removed=injected)
    text = _NOISE_RE.sub("", text)
    return CleanText(text.strip(), injected_removed=injected)


def last_path_component(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return parts[-1] if parts else ""
