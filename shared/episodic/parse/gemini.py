"""Gemini CLI sessions as trajectories: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl`
(a header line, `{"$set": …}` updates, then messages; a message rewritten with the same id replaces
it) and the older form, one pretty-printed JSON document `{sessionId, projectHash, messages: […]}`.

A tool call's result lives inside the call (`toolCalls[].result[].functionResponse.response`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from episodic.kernel.models import SessionSource
from episodic.parse.builder import RawCall, RawEvent
from episodic.parse.formats import GEMINI, gemini_roots
from episodic.parse.reader import iter_entries, load_document, looks_like_json_document
from episodic.parse.single_file import AgentSession, SingleFileSource, exit_code_in, note_time
from episodic.parse.text import TextScrubber, clean_user_text
from episodic.plumbing import bounded
from episodic.plumbing.marker import strip_hook_context

SHELL_TOOL = "run_shell_command"
EDIT_TOOLS = frozenset({"write_file", "replace"})
READ_TOOLS = frozenset({"read_file", "read_many_files"})
# what the CLI itself types as a user turn when the model stops mid-task (not the user's words)
_SYNTHETIC_PROMPTS = frozenset({"System: Please continue.", "Please continue."})
# context the CLI or a hook put in a user turn (the CLI's own isIgnoredUserContent skips these too)
_INJECTED_PREFIXES = ("<session_context>", "<hook_context>")
_REGISTRY_BYTES = 16 * 1024 * 1024
_VERSION_RE = re.compile(r"Gemini CLI update available! (\d[\w.-]*) ")
_HASH_RE = re.compile(r"[0-9a-f]{64}")  # an older release's tmp/ folder: sha256 of the project root


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _result(call: dict[str, Any]) -> tuple[str, bool]:
    """(output text, whether the response is an error) of a call's embedded functionResponse."""
    parts: list[str] = []
    failed = False
    results = call.get("result")
    for item in results if isinstance(results, list) else []:
        response = item.get("functionResponse", {}).get("response") if isinstance(item, dict) else None
        if not isinstance(response, dict):
            continue
        if isinstance(response.get("error"), str):
            parts.append(response["error"])
            failed = True
        elif isinstance(response.get("output"), str):
            parts.append(strip_hook_context(response["output"]))  # the failure hook's entry is not the output
    if not parts and isinstance(call.get("resultDisplay"), str):
        parts.append(call["resultDisplay"])
    return "\n".join(parts), failed


class GeminiSource(SingleFileSource):
    agent = GEMINI
    _registries: dict[Path, dict[str, str]]

    def __init__(
        self,
        scrubber: TextScrubber,
        roots: Sequence[str | Path] | None = None,
        tool_output_chars: int = 4000,
        max_file_bytes: int = bounded.DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        super().__init__(scrubber, roots, tool_output_chars, max_file_bytes)
        self._registries = {}

    def default_roots(self) -> list[Path]:
        if self.roots is not None:
            return self.roots
        from episodic.kernel.settings import load_settings

        return gemini_roots(load_settings())

    def parse(self, data: bytes, source: SessionSource, session: AgentSession) -> str | None:
        header: dict[str, Any] = {}
        messages: dict[str, dict[str, Any]] = {}  # by id, first position kept, latest content
        if looks_like_json_document(data):
            session.stats.lines = 1
            try:
                document = load_document(data)
            except (ValueError, RecursionError):  # bad syntax, 100,000 "[", a 5,000-digit number
                session.stats.malformed_lines = 1
                return "malformed"
            if not isinstance(document, dict):
                session.stats.malformed_lines = 1
                return "malformed"
            header = document
            _add_messages(messages, document.get("messages"))
        else:
            for entry in iter_entries(data, session.stats):
                if isinstance(entry.get("$rewindTo"), str):
                    _rewind(messages, entry["$rewindTo"])
                elif isinstance(entry.get("id"), str):
                    messages[entry["id"]] = entry  # a rewrite of one id replaces it in place
                elif isinstance(entry.get("$set"), dict):
                    update = dict(entry["$set"])
                    replaced = update.pop("messages", None)
                    if isinstance(replaced, list):  # the whole conversation, as the CLI rewrites it
                        messages.clear()
                        messages.update(
                            (str(m["id"]), m) for m in replaced if isinstance(m, dict) and "id" in m
                        )
                    header.update(update)
                elif isinstance(entry.get("sessionId"), str) and isinstance(entry.get("projectHash"), str):
                    header.update(entry)
                    _add_messages(messages, header.pop("messages", None))  # a document on one line (harvest)
                else:
                    session.skip(next(iter(entry), "<empty>"))
        if isinstance(header.get("sessionId"), str):
            session.session_ids[header["sessionId"]] = 1
        for key in ("startTime", "lastUpdated"):
            if isinstance(header.get(key), str):
                note_time(session, header[key])
        for message in messages.values():
            self._message(session, message)
        directories = header.get("directories")
        listed = directories[0] if isinstance(directories, list) and directories else None
        session.cwd = (
            self._project_root(Path(source.main_path), header.get("projectHash"))
            or (listed if isinstance(listed, str) else "")
            or _root_from_outputs(session)
        )
        session.project = _slug(Path(source.main_path))
        return None

    def _project_root(self, path: Path, project_hash: object) -> str:
        """The project folder: `~/.gemini/projects.json` maps it to the slug (or, older, the sha256
        hash) naming the folder under tmp/ that holds this session; "" when nothing says."""
        tmp = next((p for p in path.parents if p.name == "tmp" and p.parent.name == ".gemini"), None)
        if tmp is None:
            return ""
        folder = path.relative_to(tmp).parts[0]
        for root, slug in self._registry(tmp.parent / "projects.json").items():
            if folder == slug or project_hash == hashlib.sha256(root.encode()).hexdigest():
                return root
        return ""

    def _registry(self, path: Path) -> dict[str, str]:
        if path not in self._registries:
            try:  # a hostile registry (nested 100,000 deep, huge) reads as absent: sessions still index
                registry = bounded.loads(
                    bounded.read_regular(path, _REGISTRY_BYTES), max_bytes=_REGISTRY_BYTES
                )
                projects = bounded.clean_obj(registry).get("projects")
            except (OSError, ValueError, AttributeError):
                projects = None
            self._registries[path] = (
                {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)}
                if isinstance(projects, dict)
                else {}
            )
        return self._registries[path]

    def _message(self, session: AgentSession, message: dict[str, Any]) -> None:
        kind = message.get("type")
        ts = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
        if ts:
            note_time(session, ts)
        text = _content_text(message.get("content"))
        if kind == "user":
            session.entry_types["user"] = session.entry_types.get("user", 0) + 1
            session.user_texts.append(text)
            if text.strip() in _SYNTHETIC_PROMPTS:
                session.skip("user:continue")
                return
            if text.lstrip().startswith(_INJECTED_PREFIXES):
                session.skip("user:context")
                return
            cleaned = clean_user_text(text)
            session.stats.injected_context_stripped += cleaned.injected_removed
            if cleaned.text:
                session.events.append(RawEvent("prompt", cleaned.text, timestamp=ts))
        elif kind == "gemini":
            session.entry_types["assistant"] = session.entry_types.get("assistant", 0) + 1
            model = message.get("model")
            if isinstance(model, str) and model and model not in session.models:
                session.models.append(model)
            thoughts = message.get("thoughts")
            for thought in thoughts if isinstance(thoughts, list) else []:
                if isinstance(thought, dict):
                    body = f"{thought.get('subject') or ''}: {thought.get('description') or ''}".strip(": \n")
                    if body:
                        session.stats.thinking_with_text += 1
                        session.events.append(RawEvent("thinking", body, timestamp=ts))
            if text.strip():
                session.events.append(RawEvent("assistant", text.strip(), timestamp=ts))
            calls = message.get("toolCalls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    self._call(session, call, ts)
        else:
            if kind == "info" and isinstance(text, str):
                found = _VERSION_RE.search(text)
                if found and not session.agent_version:
                    session.agent_version = found.group(1)  # the version running, told by the update notice
            session.skip(f"message:{kind}")  # info / error / warning notices of the CLI

    def _call(self, session: AgentSession, raw: dict[str, Any], ts: str | None) -> None:
        call_id = str(raw.get("id") or f"call-{len(session.calls)}")
        if call_id in session.calls:
            return
        name = str(raw.get("name") or "?")
        raw_args = raw.get("args")
        args: dict[str, Any] = dict(raw_args) if isinstance(raw_args, dict) else {}
        call = RawCall(id=call_id, name=name, input=args, timestamp=ts, agent_id=None, answered=True)
        if name == SHELL_TOOL and isinstance(args.get("command"), str):
            call.command = args["command"]
        path = args.get("file_path") or args.get("absolute_path") or args.get("path")
        if name in EDIT_TOOLS | READ_TOOLS and isinstance(path, str):
            call.file_path = path
            call.reads_file = name in READ_TOOLS
        call.output, failed = _result(raw)
        status = raw.get("status")
        call.rejected = status == "cancelled"
        if name == SHELL_TOOL:
            call.exit_code = exit_code_in(call.output)
            call.output = _shell_output(call.output)
        call.is_error = failed or status == "error" or call.exit_code not in (None, 0)
        session.calls[call_id] = call
        session.events.append(RawEvent("tool", call=call, timestamp=ts))


def _slug(path: Path) -> str:
    """The folder under `~/.gemini/tmp/` holding the session: the project's name in current releases (a
    sha256 hash in older ones, which names nothing)."""
    tmp = next((p for p in path.parents if p.name == "tmp" and p.parent.name == ".gemini"), None)
    if tmp is None:
        return ""
    folder = path.relative_to(tmp).parts[0]
    return "" if _HASH_RE.fullmatch(folder) else folder


def _rewind(messages: dict[str, dict[str, Any]], message_id: str) -> None:
    """`{"$rewindTo": id}` drops that message and every later one (all of them when the id is unknown)."""
    ids = list(messages)
    cut = ids.index(message_id) if message_id in ids else 0
    for key in ids[cut:]:
        del messages[key]


# run_shell_command's report: labelled fields; `Error: (none)` would read as a failure to the evidence rules
_SHELL_REPORT_RE = re.compile(
    r"^Command: .*?\nDirectory: .*?\nOutput: (?P<output>.*?)\nError: (?P<error>.*?)\nExit Code: ", re.S
)


def _shell_output(report: str) -> str:
    """The command's own output (and its error, when there is one) out of the labelled report."""
    found = _SHELL_REPORT_RE.match(report)
    if found is None:
        return report
    output = "" if found["output"] == "(empty)" else found["output"]
    error = "" if found["error"] == "(none)" else found["error"]
    return "\n".join(part for part in (output, error and f"Error: {error}") if part)


_WROTE_RE = re.compile(r"(?:file|File): (/\S+?)\.?(?:\s|$)")


def _root_from_outputs(session: AgentSession) -> str:
    """The project root a file tool reveals: its output names the absolute path of a relative `file_path`
    (the session files of this form record no working folder)."""
    for call in session.calls.values():
        relative = call.file_path
        if not relative or relative.startswith("/"):
            continue
        for found in _WROTE_RE.findall(call.output[:1000]):
            if found.endswith("/" + relative):
                return found[: -len(relative) - 1]
    return ""


def _add_messages(messages: dict[str, dict[str, Any]], items: object) -> None:
    for index, message in enumerate(items if isinstance(items, list) else []):
        if isinstance(message, dict):
            messages[str(message.get("id") or f"message-{index}")] = message
