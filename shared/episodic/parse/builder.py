"""Turn Claude Code entries (already decoded) into the raw pieces of a trajectory, in file order.

Order is file order with `uuid` de-duplication (not the latest leaf's ancestor chain: parallel tool calls,
progress entries and resumed files fork or break the `parentUuid` tree in most real files, so walking it
drops real work). Split assistant lines are grouped by `message.id`; tool results join their call by id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from episodic.kernel.models import ParseStats
from episodic.parse.text import clean_user_text

FILE_READ_TOOLS = frozenset({"Read", "NotebookRead"})
FILE_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash"})
REJECTED_TEXT = "The user doesn't want to proceed with this tool use"
_EXIT_CODE_RE = re.compile(r"^\s*(?:<tool_use_error>)?\s*Exit code (-?\d+)")
_AGENT_ID_IN_RESULT_RE = re.compile(r"agentId: ([\w-]+)")
IGNORED_TYPES = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "last-prompt",
        "agent-name",
        "pr-link",
        "permission-mode",
        "agent-setting",
        "worktree-state",
    }
)
TITLE_FIELDS = {"summary": "summary", "custom-title": "customTitle", "ai-title": "aiTitle"}


@dataclass
class RawCall:
    id: str
    name: str
    input: dict[str, Any]
    timestamp: str | None
    agent_id: str | None
    output: str = ""
    is_error: bool = False
    exit_code: int | None = None
    interrupted: bool = False
    rejected: bool = False
    answered: bool = False
    spawned_agent: str | None = None  # the subagent a Task/Agent call started
    # set by other agents' adapters, whose tools name the command and the file differently
    command: str | None = None
    file_path: str | None = None
    reads_file: bool = False


@dataclass
class RawEvent:
    kind: str  # prompt | assistant | thinking | tool | compact_summary | interrupt
    text: str = ""
    call: RawCall | None = None
    timestamp: str | None = None
    agent_id: str | None = None
    message_id: str | None = None


@dataclass
class RawSession:
    """Everything read from one session's files, before cutting and scrubbing."""

    stats: ParseStats = field(default_factory=ParseStats)
    events: list[RawEvent] = field(default_factory=list)
    calls: dict[str, RawCall] = field(default_factory=dict)
    session_ids: dict[str, int] = field(default_factory=dict)
    titles: list[str] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)  # every user text as written (for marker checks)
    cwd: str = ""
    project: str = ""  # the project's name when no folder names it (a Gemini CLI tmp/ folder's slug)
    git_branch: str | None = None
    models: list[str] = field(default_factory=list)
    entrypoint: str = ""
    first_ts: str | None = None
    last_ts: str | None = None
    entry_types: dict[str, int] = field(default_factory=dict)
    subagents: list[str] = field(default_factory=list)
    seen_uuids: set[str] = field(default_factory=set)
    seen_blocks: set[tuple[str, str]] = field(default_factory=set)
    codex: bool = False

    def skip(self, kind: str, bucket: str = "entry") -> None:
        target = self.stats.skipped_entry_types if bucket == "entry" else self.stats.skipped_block_types
        target[kind] = target.get(kind, 0) + 1


class EntryReader:
    """Feeds entries of one file (main or subagent) into a RawSession."""

    def __init__(self, session: RawSession, *, agent_id: str | None, is_main: bool) -> None:
        self.session = session
        self.file_agent_id = agent_id
        self.is_main = is_main
        self.sidechain_agents: dict[str, str] = {}  # uuid -> inline sidechain agent id (old layout)

    def feed(self, entry: dict[str, Any]) -> None:
        s = self.session
        kind = entry.get("type")
        if not isinstance(kind, str):
            s.skip("<no type>")
            return
        s.entry_types[kind] = s.entry_types.get(kind, 0) + 1
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            if uuid in s.seen_uuids:  # resumed files and retries repeat lines
                s.stats.duplicate_uuids += 1
                return
            s.seen_uuids.add(uuid)
        if kind in ("user", "assistant"):
            self._envelope(entry)
            agent = self._agent_for(entry)
            if kind == "user":
                self._user(entry, agent)
            else:
                self._assistant(entry, agent)
        elif kind in TITLE_FIELDS:
            title = entry.get(TITLE_FIELDS[kind])
            if isinstance(title, str) and title.strip() and title.strip() not in s.titles:
                s.titles.append(title.strip())
        elif kind == "attachment":
            self._attachment(entry)
        elif kind == "system":
            s.skip(f"system:{entry.get('subtype', '?')}")
        else:
            s.skip(kind)

    # ------------------------------------------------------------ envelope

    def _envelope(self, entry: dict[str, Any]) -> None:
        s = self.session
        ts = entry.get("timestamp")
        if isinstance(ts, str):
            if s.first_ts is None or ts < s.first_ts:
                s.first_ts = ts
            if s.last_ts is None or ts > s.last_ts:
                s.last_ts = ts
        if not self.is_main or (entry.get("isSidechain") and self.file_agent_id is None):
            return  # a subagent's envelope says nothing new about the session
        sid = entry.get("sessionId")
        if isinstance(sid, str):
            s.session_ids[sid] = s.session_ids.get(sid, 0) + 1
        cwd = entry.get("cwd")
        if isinstance(cwd, str) and cwd and not s.cwd:
            s.cwd = cwd  # where the session started: later `cd`s move into subfolders
        branch = entry.get("gitBranch")
        if isinstance(branch, str):
            s.git_branch = branch
        entrypoint = entry.get("entrypoint")
        if isinstance(entrypoint, str) and not s.entrypoint:
            s.entrypoint = entrypoint

    def _agent_for(self, entry: dict[str, Any]) -> str | None:
        if self.file_agent_id is not None:
            return self.file_agent_id
        if not entry.get("isSidechain"):
            return None
        agent = entry.get("agentId")
        if isinstance(agent, str):
            return agent
        # old inline layout: a sidechain root starts a new agent, its descendants inherit it
        parent = entry.get("parentUuid")
        uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else ""
        inherited = self.sidechain_agents.get(parent) if isinstance(parent, str) else None
        if inherited is None:
            inherited = f"sidechain-{len(set(self.sidechain_agents.values())) + 1}"
            self.session.subagents.append(inherited)
        if uuid:
            self.sidechain_agents[uuid] = inherited
        return inherited

    # ------------------------------------------------------------ user

    def _user(self, entry: dict[str, Any], agent: str | None) -> None:
        s = self.session
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        ts = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            s.skip("user:no-content")
            return
        texts: list[str] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif btype == "tool_result":
                self._tool_result(block, entry)
            else:
                s.skip(f"user:{btype}", bucket="block")
        if not texts:
            return
        raw = "\n".join(texts)
        s.user_texts.append(raw)
        if entry.get("isCompactSummary"):
            s.events.append(RawEvent("compact_summary", raw, timestamp=ts, agent_id=agent))
            return
        if entry.get("isMeta") or entry.get("isVisibleInTranscriptOnly"):
            return
        cleaned = clean_user_text(raw)
        s.stats.injected_context_stripped += cleaned.injected_removed
        if cleaned.interrupt:
            s.events.append(RawEvent("interrupt", cleaned.interrupt, timestamp=ts, agent_id=agent))
        elif cleaned.text:
            s.events.append(RawEvent("prompt", cleaned.text, timestamp=ts, agent_id=agent))

    def _tool_result(self, block: dict[str, Any], entry: dict[str, Any]) -> None:
        call = self.session.calls.get(str(block.get("tool_use_id")))
        if call is None or call.answered:
            self.session.skip("tool_result:unmatched", bucket="block")
            return
        call.answered = True
        output = _result_text(block.get("content"))
        extra = entry.get("toolUseResult")
        if not output and isinstance(extra, dict):
            output = "\n".join(str(extra.get(k)) for k in ("stdout", "stderr") if extra.get(k))
        call.output = output
        call.is_error = bool(block.get("is_error"))
        call.rejected = output.startswith(REJECTED_TEXT) or extra == "User rejected tool use"
        call.interrupted = (isinstance(extra, dict) and bool(extra.get("interrupted"))) or output.startswith(
            "[Request interrupted by user"
        )
        code = _EXIT_CODE_RE.match(output)
        if code:
            call.exit_code = int(code.group(1))
        elif call.name in SHELL_TOOLS and not call.is_error and not call.rejected:
            call.exit_code = 0
        if call.name in ("Task", "Agent"):
            agent = extra.get("agentId") if isinstance(extra, dict) else None
            found = _AGENT_ID_IN_RESULT_RE.search(output) if not agent else None
            call.spawned_agent = agent if isinstance(agent, str) else (found.group(1) if found else None)

    # ------------------------------------------------------------ assistant

    def _assistant(self, entry: dict[str, Any], agent: str | None) -> None:
        s = self.session
        message = entry.get("message")
        if not isinstance(message, dict):
            s.skip("assistant:no-message")
            return
        model = message.get("model")
        if model == "<synthetic>" or entry.get("isApiErrorMessage"):
            s.skip("assistant:synthetic")  # client-made ("No response requested.") or an API error notice
            return
        if isinstance(model, str) and model and model not in s.models:
            s.models.append(model)
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        ts = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                self._assistant_text(str(block.get("text") or ""), message_id, ts, agent)
            elif btype == "thinking":
                thought = block.get("thinking")
                if isinstance(thought, str) and thought.strip():
                    if self._first_time(message_id, "thinking:" + thought):
                        s.stats.thinking_with_text += 1
                        s.events.append(
                            RawEvent(
                                "thinking",
                                thought.strip(),
                                timestamp=ts,
                                agent_id=agent,
                                message_id=message_id,
                            )
                        )
                else:
                    s.stats.thinking_stripped += 1
            elif btype == "redacted_thinking":
                s.stats.thinking_stripped += 1
            elif btype == "tool_use":
                self._tool_use(block, ts, agent)
            else:
                s.skip(f"assistant:{btype}", bucket="block")

    def _first_time(self, message_id: str | None, key: str) -> bool:
        if message_id is None:
            return True
        token = (message_id, key)
        if token in self.session.seen_blocks:  # a split or re-logged line repeating a block
            return False
        self.session.seen_blocks.add(token)
        return True

    def _assistant_text(self, text: str, message_id: str | None, ts: str | None, agent: str | None) -> None:
        text = text.strip()
        if not text or not self._first_time(message_id, "text:" + text):
            return
        events = self.session.events
        last = events[-1] if events else None
        if last and last.kind == "assistant" and message_id and last.message_id == message_id:
            last.text += "\n\n" + text  # split lines of one response read as one text
            return
        events.append(RawEvent("assistant", text, timestamp=ts, agent_id=agent, message_id=message_id))

    def _tool_use(self, block: dict[str, Any], ts: str | None, agent: str | None) -> None:
        call_id = str(block.get("id") or f"call-{len(self.session.calls)}")
        if call_id in self.session.calls:
            return
        raw_input = block.get("input")
        call = RawCall(
            id=call_id,
            name=str(block.get("name") or "?"),
            input=dict(raw_input) if isinstance(raw_input, dict) else {},
            timestamp=ts,
            agent_id=agent,
        )
        self.session.calls[call_id] = call
        self.session.events.append(RawEvent("tool", call=call, timestamp=ts, agent_id=agent))

    # ------------------------------------------------------------ attachments

    def _attachment(self, entry: dict[str, Any]) -> None:
        s = self.session
        attachment = entry.get("attachment")
        kind = attachment.get("type") if isinstance(attachment, dict) else None
        if not isinstance(attachment, dict):
            s.skip("attachment:?")
            return
        if kind == "hook_additional_context":
            content = attachment.get("content")
            texts = content if isinstance(content, list) else [content]
            for text in texts:
                if isinstance(text, str):
                    s.stats.injected_context_stripped += clean_user_text(text).injected_removed
            s.skip("attachment:hook_additional_context")  # hook output is context, not the user's words
            return
        prompt = attachment.get("prompt")
        origin = attachment.get("origin")
        human = not isinstance(origin, dict) or origin.get("kind") in (None, "human")
        if (
            kind == "queued_command"
            and attachment.get("commandMode", "prompt") == "prompt"
            and human
            and isinstance(prompt, str)
            and self.is_main
        ):
            s.user_texts.append(prompt)
            cleaned = clean_user_text(prompt)  # typed while the agent worked: it never becomes a user entry
            s.stats.injected_context_stripped += cleaned.injected_removed
            if cleaned.text:
                ts = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
                s.events.append(RawEvent("prompt", cleaned.text, timestamp=ts))
            return
        s.skip(f"attachment:{kind}")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict):
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif item.get("type") == "tool_reference":
                    parts.append(f"[tool reference: {item.get('tool_name', '?')}]")
        return "\n".join(parts)
    return ""
