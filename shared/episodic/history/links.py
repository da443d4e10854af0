"""Work items: parse what a user names (`#123`, a GitHub URL, `ENT-297`, a Beads id) and detect links in a
session's branch name, prompts and commands (marked `detected`, never `confirmed`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from episodic.history.models import HistoryRecord, ItemKind, WorkLink
from episodic.kernel.errors import InvalidArgumentError

_GITHUB_URL = re.compile(r"https?://github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull)/(\d{1,7})\b")
_GITHUB_REF = re.compile(r"^(?:([\w.-]+/[\w.-]+))?#(\d{1,7})$")
_JIRA_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]{1,9})-(\d{1,6})$")
_BEADS_ID = re.compile(r"^(?:bd|[a-z][a-z0-9]{1,15})-[a-z0-9]{2,8}(?:\.\d+)*$")
# a tracker key starting a branch's path segment: `alex/ent-297-fix-…`, `ENT-12`, `feature/abc-3_x`
_BRANCH_KEY = re.compile(r"(?:^|/)([A-Za-z][A-Za-z0-9]{1,9})-(\d{1,6})(?=$|[-_/.])")
_PROMPT_KEY = re.compile(r"(?<![\w/-])([A-Z][A-Z0-9]{1,9})-(\d{1,6})(?![\w-])")
_BEADS_COMMAND = re.compile(
    r"\bbd\s+(?:show|update|close|start|ready|comment)\s+([a-z][a-z0-9]{1,15}-[a-z0-9]{2,8})\b"
)
# uppercase words followed by a number that are not tracker keys (encodings, standards, hashes, models)
_NOT_KEYS = frozenset(
    {"UTF", "SHA", "MD", "ISO", "RFC", "HTTP", "TLS", "SSL", "CVE", "PEP", "ES", "GPT", "AES", "RSA", "IPV"}
    | {"X", "UTC", "GMT", "PR", "HTTP2", "P"}
)
_GITHUB_BRANCH_PREFIXES = frozenset({"issue", "issues", "gh", "pr"})


@dataclass(frozen=True)
class Item:
    """A work item in normal form."""

    key: str
    kind: ItemKind
    url: str = ""


def parse_item(raw: str) -> Item:
    """`#123`, `owner/repo#123`, a GitHub issue/PR URL, `ENT-297`, or a Beads id; else InvalidArgumentError."""
    text = raw.strip()
    url = _GITHUB_URL.fullmatch(text.rstrip("/"))
    if url:
        owner, repo, number = url.groups()
        return Item(f"{owner}/{repo}#{number}", "github", text.rstrip("/"))
    ref = _GITHUB_REF.match(text)
    if ref:
        repo, number = ref.groups()
        return Item(f"{repo}#{number}" if repo else f"#{number}", "github")
    key = _JIRA_KEY.match(text)
    if key:
        prefix, number = key.groups()
        if prefix.lower() == "bd":  # early Beads ids are numbered: bd-42
            return Item(text.lower(), "beads")
        if prefix.lower() in _GITHUB_BRANCH_PREFIXES:
            return Item(f"#{number}", "github")
        return Item(f"{prefix.upper()}-{number}", "jira")
    if _BEADS_ID.match(text):
        return Item(text, "beads")
    raise InvalidArgumentError(
        f"{raw!r} is not a work item: use #123, owner/repo#123, a GitHub issue or PR URL, "
        "a key like ENT-297, or a Beads id like bd-a1b2"
    )


def _key_item(prefix: str, number: str) -> Item | None:
    if prefix.lower() in _GITHUB_BRANCH_PREFIXES:
        return Item(f"#{number}", "github")
    if prefix.upper() in _NOT_KEYS:
        return None
    return Item(f"{prefix.upper()}-{number}", "jira")


def detect_items(record: HistoryRecord, commands: Sequence[str] = ()) -> list[tuple[Item, str]]:
    """(item, evidence) found in the branch name, the prompts and the commands run, first sighting each."""
    found: dict[str, tuple[Item, str]] = {}

    def add(item: Item | None, evidence: str) -> None:
        if item is not None and item.key not in found:
            found[item.key] = (item, evidence)

    for match in _BRANCH_KEY.finditer(record.git_branch):
        add(_key_item(*match.groups()), "branch")
    for prompt in record.prompts:
        for url in _GITHUB_URL.finditer(prompt):
            owner, repo, number = url.groups()
            add(Item(f"{owner}/{repo}#{number}", "github", url.group(0)), "prompt")
        for prefix, number in _PROMPT_KEY.findall(prompt):
            add(_key_item(prefix, number), "prompt")
    for command in commands:
        for bead in _BEADS_COMMAND.findall(command):
            add(Item(bead, "beads"), "command")
    return list(found.values())


def detected_links(record: HistoryRecord, commands: Sequence[str], linked_at: datetime) -> list[WorkLink]:
    return [
        WorkLink(
            tenant_id=record.tenant_id,
            session_id=record.session_id,
            item=item.key,
            kind=item.kind,
            origin="detected",
            linked_at=linked_at,
            cwd=record.cwd,
            evidence=evidence,
            session_name=record.titles[-1] if record.titles else "",
            url=item.url,
        )
        for item, evidence in detect_items(record, commands)
    ]
