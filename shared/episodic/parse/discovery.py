"""Find Claude Code session files and group subagent files with their parent session.

Only the first bytes of each file are read (the `sessionId`, the `agentId`, the format), never the whole.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from episodic.kernel.models import SessionSource
from episodic.kernel.settings import Settings
from episodic.plumbing import bounded

# Folders beside transcripts that hold other data (file backups, memory notes, large tool outputs).
SKIP_DIRS = frozenset({"file-history", "memory", "tool-results", "todos", "shell-snapshots", "debug"})
NOT_TRANSCRIPTS = frozenset({"history.jsonl", "journal.jsonl"})
INTERNAL_AGENT_PREFIXES = ("acompact", "aprompt_suggestion")
INTERNAL_AGENT_TEXTS = (
    "Your task is to create a detailed summary of the conversation so far",
    "[SUGGESTION MODE",
)
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_SESSION_ID_RE = re.compile(rb'"sessionId":"([^"\\]{1,200})"')
_AGENT_ID_RE = re.compile(rb'"agentId":"([^"\\]{1,200})"')
_HEAD_BYTES = 256 * 1024


def default_roots(settings: Settings) -> list[Path]:
    """Claude Code config folders that hold a `projects/` folder: CLAUDE_CONFIG_DIR entries, XDG, ~/.claude."""
    candidates: list[Path] = []
    if settings.claude_config_dir:
        candidates += [
            Path(p.strip()).expanduser() for p in settings.claude_config_dir.split(",") if p.strip()
        ]
    if settings.xdg_config_home:
        candidates.append(Path(settings.xdg_config_home).expanduser() / "claude")
    elif settings.user_home:
        candidates.append(Path(settings.user_home) / ".config" / "claude")
    if settings.user_home:
        candidates.append(Path(settings.user_home) / ".claude")
    roots: list[Path] = []
    seen: set[Path] = set()
    for root in candidates:
        try:
            resolved = root.resolve()
        except OSError:
            continue
        if resolved not in seen and (root / "projects").is_dir():
            seen.add(resolved)
            roots.append(root)
    return roots


@dataclass
class FileHead:
    """What the first bytes of a file say about it."""

    path: Path
    session_id: str | None = None
    agent_id: str | None = None
    internal: bool = False
    size: int = 0
    mtime: float = 0.0


@dataclass
class _Group:
    key: str
    main: FileHead | None = None
    agents: list[FileHead] = field(default_factory=list)
    internal: list[FileHead] = field(default_factory=list)


def is_agent_file(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def _is_candidate(path: Path) -> bool:
    return (
        path.suffix == ".jsonl"
        and path.name not in NOT_TRANSCRIPTS
        and not SKIP_DIRS.intersection(path.parts)
    )


def iter_candidate_files(paths: Iterable[Path]) -> list[Path]:
    """Every .jsonl transcript candidate under the paths (files or folders, recursive), sorted, unique."""
    found: set[Path] = set()
    for base in paths:
        if not base.is_dir() and (base.exists() or base.is_symlink()):  # a FIFO, a loop: load reports it
            if _is_candidate(base):
                found.add(base)
            if base.is_file():
                found.update(_companions(base))
            continue
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in files:
                path = Path(folder) / name
                if _is_candidate(path):
                    found.add(path)
    return sorted(found)


def _companions(path: Path) -> list[Path]:
    """Files that belong with one file given by hand: its subagents, or the parent of a subagent."""
    out: list[Path] = []
    if is_agent_file(path):
        folder = path.parent
        tops = [p for p in (folder, folder.parent, folder.parent.parent) if p.name == "subagents"]
        if tops:
            out.append(tops[0].parent.with_suffix(".jsonl"))
        elif folder.name == "agents":
            out.append(folder.parent / "session.jsonl")
        else:
            head = read_head(path)
            if head is not None and head.session_id:
                out.append(folder / f"{head.session_id}.jsonl")
    else:
        out += path.with_suffix("").glob("subagents/**/agent-*.jsonl")
        if path.name == "session.jsonl":
            out += path.parent.glob("agents/agent-*.jsonl")
        own = read_head(path)
        for sibling in path.parent.glob("agent-*.jsonl"):  # flat 2.0 layout: only this session's agents
            head = read_head(sibling)
            if own is not None and head is not None and head.session_id in (own.session_id, path.stem):
                out.append(sibling)
    return [p for p in out if p.is_file() and _is_candidate(p)]


def read_head(path: Path) -> FileHead | None:
    """The session and agent ids from the first bytes; None when the file cannot be read."""
    try:
        return _read_head(path)
    except Exception:  # one odd file (a FIFO, a device, a hostile first line) never stops discovery
        return FileHead(path=path)


def _read_head(path: Path) -> FileHead:
    try:
        mtime = path.stat().st_mtime
        head, size = bounded.read_head(path, _HEAD_BYTES)  # regular files only: a FIFO never blocks
    except OSError:
        return FileHead(path=path)
    info = FileHead(path=path, size=size, mtime=mtime)
    first_line = head.split(b"\n", 1)[0]
    first: object = None
    with contextlib.suppress(ValueError, UnicodeDecodeError):  # incl. too deep (100,000 "[")
        first = bounded.loads(first_line, max_bytes=_HEAD_BYTES)
    if isinstance(first, dict) and isinstance(first.get("sessionId"), str):
        info.session_id = bounded.clean_text(first["sessionId"])
        agent = first.get("agentId")
        info.agent_id = agent if isinstance(agent, str) else None
    else:
        match = _SESSION_ID_RE.search(head)
        info.session_id = match.group(1).decode("utf-8", "replace") if match else None
        agent_match = _AGENT_ID_RE.search(head)
        info.agent_id = agent_match.group(1).decode("utf-8", "replace") if agent_match else None
    if is_agent_file(path):
        name_id = path.stem[len("agent-") :]
        info.agent_id = info.agent_id or name_id
        info.internal = name_id.startswith(INTERNAL_AGENT_PREFIXES) or (info.agent_id or "").startswith(
            INTERNAL_AGENT_PREFIXES
        )
        if not info.internal:
            text = head[:65536].decode("utf-8", "replace")
            info.internal = any(marker in text for marker in INTERNAL_AGENT_TEXTS) and _opens_with_internal(
                head
            )
    return info


def _opens_with_internal(head: bytes) -> bool:
    """An internal agent's own prompt leads its first user texts (not a quote deep inside real work)."""
    for raw in head.split(b"\n")[:6]:
        try:
            entry = bounded.loads(raw, max_bytes=_HEAD_BYTES)
        except (ValueError, UnicodeDecodeError):
            continue
        for text in _user_texts(entry):
            if text.lstrip().startswith(INTERNAL_AGENT_TEXTS) or INTERNAL_AGENT_TEXTS[0] in text[-4000:]:
                return True  # the compaction prompt comes last in its user message
    return False


def _user_texts(entry: object) -> list[str]:
    message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "user" else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def session_key_for(head: FileHead) -> str:
    stem = head.path.stem
    if _UUID_RE.match(stem):
        return stem
    return head.session_id or stem


def group_sessions(files: Sequence[Path]) -> list[SessionSource]:
    """Group files into sessions: main files by key, agent files under their parent's sessionId."""
    groups: dict[str, _Group] = {}
    agents: list[FileHead] = []
    for path in files:
        head = read_head(path)
        if head is None:
            continue
        if is_agent_file(path):
            agents.append(head)
            continue
        key = session_key_for(head)
        group = groups.get(key)
        if group is not None and group.main is not None:
            key = f"{key}:{path.stem}"  # two files claim one session (a copy): keep both, never merge them
            group = None
        groups.setdefault(key, _Group(key=key)).main = head
    by_session_id = {g.main.session_id: g for g in groups.values() if g.main and g.main.session_id}
    for head in agents:
        parent_key = head.session_id or _parent_dir_key(head.path)
        group = groups.get(parent_key) or by_session_id.get(parent_key)
        if group is None:  # the parent is not in the scanned set: the agent stands as its own session
            group = groups.setdefault(parent_key, _Group(key=parent_key))
        (group.internal if head.internal else group.agents).append(head)
    return [_to_source(group) for _, group in sorted(groups.items())]


def _parent_dir_key(path: Path) -> str:
    for parent in path.parents:
        if _UUID_RE.match(parent.name):
            return parent.name
    return path.stem


def _to_source(group: _Group) -> SessionSource:
    agents = sorted(group.agents, key=lambda h: str(h.path))
    internal = sorted(group.internal, key=lambda h: str(h.path))
    main = group.main
    if main is None:  # an orphan subagent group: its first real agent (or internal agent) leads
        if agents:
            main, agents = agents[0], agents[1:]
        else:
            main, internal = internal[0], internal[1:]
    members = [main, *agents]
    return SessionSource(
        session_key=group.key,
        main_path=str(main.path),
        subagent_paths=[str(h.path) for h in agents],
        skipped_agent_paths=[str(h.path) for h in internal],
        total_bytes=sum(h.size for h in members),
        mtime=max(h.mtime for h in members),
    )
