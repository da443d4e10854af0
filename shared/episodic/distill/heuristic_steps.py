"""The trajectory as a short list of phases: what was read, changed and checked, in order.

Feeds the heuristic card's `steps`, `critical_checks`, `dead_ends` (failed commands, reverts) and
`tags` (file kinds and tools seen)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from episodic.distill.evidence import (
    EDIT_TOOLS,
    SHELL_TOOLS,
    CheckResult,
    check_result,
    check_segment,
    command_segments,
    exited_ok,
    is_edit,
    normalise_command,
    shell_command,
)
from episodic.distill.heuristic_statements import as_statement
from episodic.distill.heuristic_text import clip, safe_line, sentences, with_first_chars
from episodic.distill.readability import is_cut
from episodic.kernel.models import Event, ToolCall

READ_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "LS", "NotebookRead", "LSP", "view"}
    | {
        "read_file",
        "read_many_files",
        "list_directory",
        "glob",
        "search_file_content",
        "grep_search",
    }  # Gemini
)
WEB_TOOLS = frozenset({"WebFetch", "WebSearch", "web_fetch", "google_web_search", "web_search"})
TASK_TOOLS = frozenset({"Task", "Agent"})
_QUIET_COMMANDS = re.compile(
    r"^(?:grep|rg|find|ls|cat|head|tail|wc|which|test|echo|pwd|cd|sleep|stat|file|tree)\b"
)
_ERROR_LINE_RE = with_first_chars(
    re.compile(
        r"(?i)\b(?:error|fail(?:ed|ure|s)?|panic|exception|cannot|can't|unable|undefined|not found|no such|denied"
        r"|refused|invalid|missing|mismatch|expected|unknown|unexpected|timed? ?out|not defined|requires?)\b"
    )
)
_BORING_ERROR_RE = re.compile(
    r"(?i)^(?:exit code \d+|error:? exit status \d+|npm err! (?:code|errno|command|path|a complete log)|npm warn|make: \*\*\*"
    r"|fail\s*$|fail\t|ok\s|exit status|error: process completed|elifecycle|\s*at\s)"
)
_DURATION_RE = re.compile(r"\(?\b\d+(?:\.\d+)?(?:ms|s|m)\b\)?")
_REVERT_RE = re.compile(
    r"^git\s+(?:checkout\s+(?:\S+\s+)?--\s|restore\s|stash(?:\s+push)?\s*$|reset\s+--hard)"
)
# the assistant announcing the change it is about to make: "Now let me update the loader to skip …"
_EDIT_INTENT_RE = re.compile(
    r"(?i)^\W*(?:(?:now|next|first|then|ok|okay|great|perfect|good)\W+)*(?:let me|I'?ll|I will|I need to|I'm going to"
    r"|let'?s|we need to)\s+(?:also\s+|now\s+|first\s+)?(?:update|add|fix|change|remove|replace|rename|modify|implement"
    r"|create|write|refactor|move|make|extract|use|wire|handle|apply|adjust|set|convert|simplify|delete|drop|introduce"
    r"|switch|restore|revert|guard|wrap|split|merge|inline|pass|return|skip|ensure|include|expose|register|call)\b"
)
_INTENT_CHARS = 140
_INTENT_SENTENCES = 4  # of the message before an edit: the intent is stated last, just before the call
_WRAPPER_RE = re.compile(
    r"^(?:\w+=\S*\s+)*(?:(?:sudo|time|env|nice|timeout\s+\S+|(?:uv|poetry|pipenv)\s+run)\s+)*"
)

EXTENSION_TAGS = {
    "go": "go", "py": "python", "ts": "typescript", "tsx": "typescript", "js": "javascript", "jsx": "javascript",
    "mjs": "javascript", "ex": "elixir", "exs": "elixir", "heex": "elixir", "rs": "rust", "rb": "ruby",
    "java": "java", "kt": "kotlin", "swift": "swift", "c": "c", "cpp": "c++", "cc": "c++", "cs": "c#",
    "php": "php", "sh": "shell", "bash": "shell", "sql": "sql", "tf": "terraform", "vue": "vue",
    "svelte": "svelte", "css": "css", "scss": "css", "prisma": "prisma", "dart": "dart", "lua": "lua",
    "zig": "zig", "proto": "protobuf", "graphql": "graphql",
}  # fmt: skip
COMMAND_TAGS = {
    "go": "go", "npm": "npm", "pnpm": "pnpm", "yarn": "yarn", "bun": "bun", "pytest": "pytest", "mix": "mix",
    "cargo": "cargo", "docker": "docker", "git": "git", "make": "make", "gh": "github", "kubectl": "kubernetes",
    "terraform": "terraform", "aws": "aws", "cdk": "aws-cdk", "biome": "biome", "prisma": "prisma", "tsc": "typescript",
    "ruff": "ruff", "mypy": "mypy", "uv": "uv", "poetry": "poetry", "mise": "mise", "jest": "jest", "vitest": "vitest",
    "eslint": "eslint", "tmux": "tmux", "psql": "postgres", "sqlite3": "sqlite", "golangci-lint": "golangci-lint",
}  # fmt: skip


@dataclass
class Phase:
    """One step; `label` is raw transcript text, sanitised only when the phase is shown (`text()`)."""

    kind: str  # read | web | edit | check | shell | task | todo | revert
    label: str
    priority: int
    files: list[str] = field(default_factory=list)
    count: int = 1
    failed: bool = False
    key: str = ""
    items: list[str] = field(default_factory=list)  # todo items completed
    output: str = ""  # a failed check's output, read for its error line only when shown
    said: str = ""  # an edit's preceding assistant message, read for its stated intent only when shown
    _text: str | None = None

    def text(self) -> str:
        if self._text is None:
            if self.items:
                done = [line for line in (safe_line(i, 140) for i in self.items) if line]
                self._text = clip("Done: " + "; ".join(done), 200) if done else ""
            elif self.kind == "edit" and self.said and (intent := edit_intent(self.said)):
                what = intent[0].lower() + intent[1:] if intent[1:2].islower() else intent
                self._text = safe_line(f"{self.label}: {what}", 200)
            else:
                detail = error_line(self.output) if self.output else ""
                detail = "" if is_cut(detail) else detail  # an error line cut mid-way says nothing whole
                label = f"{self.label} ({detail})" if detail else self.label
                suffix = f" ({self.count} runs)" if self.count > 1 and self.kind in ("check", "shell") else ""
                self._text = safe_line(label, 200 - len(suffix)) + suffix
        return self._text


def base_name(path: str) -> str:
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name if "." in name.strip(".") else ""


def unwrap(segment: str) -> str:
    """The command without env assignments and wrappers (`sudo`, `uv run`); the pattern is anchored and
    always matches, so slicing at its end is the substitution without a scan of every position."""
    return segment[_WRAPPER_RE.match(segment).end() :]  # type: ignore[union-attr]


@lru_cache(maxsize=4096)
def command_label(command: str) -> str:
    """A command's name without arguments: `go test`, `npm run check`, `python -m pytest`."""
    for segment in command_segments(command):
        tokens = unwrap(segment).split()
        if not tokens or tokens[0] in ("cd", "export", "source", "set", "echo"):
            continue
        if len(tokens) > 2 and tokens[1] == "-m":
            return " ".join(tokens[:3])
        kept: list[str] = []
        for token in tokens[:3]:
            if token.startswith(("-", ".", "/", "~", "$", '"', "'")) or "/" in token or "=" in token:
                break
            kept.append(token)
        if kept:
            return " ".join(kept)
    return ""


def edit_intent(message: str) -> str:
    """The change an assistant message announces just before an edit, as a statement ("" if none)."""
    for sentence in reversed(sentences(message)[-_INTENT_SENTENCES:]):
        if _EDIT_INTENT_RE.match(sentence):
            line = as_statement(sentence, _INTENT_CHARS, intent=True)
            if line:
                return line
    return ""


def error_line(output: str) -> str:
    """The first informative error line of a command's output, without paths, numbers or hex."""
    for raw in output[:3000].splitlines():
        line = raw.strip()
        if len(line) < 8 or _BORING_ERROR_RE.match(line) or not _ERROR_LINE_RE.search(line):
            continue
        if "(eval)" in line or sum(map(str.isalpha, line)) + line.count(" ") < 0.7 * len(line):
            continue  # shell noise, box drawing, code excerpts
        cleaned = safe_line(_DURATION_RE.sub(" ", line), 160, numbers=False)
        if len(cleaned.split()) >= 3:
            return cleaned
    return ""


def _file_list(names: list[str]) -> str:
    unique = list(dict.fromkeys(n for n in names if n))
    if not unique:
        return ""
    shown = ", ".join(unique[:3])
    return shown + (f" and {len(unique) - 3} more" if len(unique) > 3 else "")


def _todo_items(call: ToolCall, created: list[str]) -> list[str]:
    """Items a todo/task tool marked completed in this call."""
    if call.name == "TodoWrite":
        todos = call.input.get("todos")
        if isinstance(todos, list):
            return [
                str(t.get("content", ""))
                for t in todos
                if isinstance(t, dict) and t.get("status") == "completed"
            ]
    if call.name == "TaskCreate":
        created.append(str(call.input.get("subject") or call.input.get("description") or ""))
    if call.name == "TaskUpdate" and call.input.get("status") == "completed":
        task_id = str(call.input.get("taskId") or "")
        if task_id.isdigit() and 0 < int(task_id) <= len(created):
            return [created[int(task_id) - 1]]
    return []


def build_phases(events: list[Event]) -> list[Phase]:
    """Tool calls folded into phases; consecutive reads/edits merge, todo completions become steps."""
    phases: list[Phase] = []
    done_todos: set[str] = set()
    created_tasks: list[str] = []
    said = ""  # the last assistant message not yet tied to an edit
    for event in events:
        if event.kind == "assistant" and event.text:
            said = event.text
            continue
        call = event.tool
        if event.kind != "tool" or call is None or call.rejected:
            continue
        phase = _phase_of(call, done_todos, created_tasks)
        if phase is None:
            continue
        if phase.kind == "edit":
            phase.said, said = said, ""
        last = phases[-1] if phases else None
        if last and last.kind == phase.kind and phase.kind in ("read", "edit") and not last.failed:
            last.files += phase.files
            last.count += 1
            last.said = last.said or phase.said
            continue
        same_key = last and last.kind == phase.kind and last.key == phase.key and phase.key
        if (
            last
            and last.failed == phase.failed
            and (same_key or (phase.kind == "check" and last.label == phase.label))
        ):
            last.count += 1
            continue
        phases.append(phase)
    for phase in phases:
        if phase.kind == "read":
            files = _file_list(phase.files)
            phase.label = f"Read {files}" if files else "Searched the code"
        elif phase.kind == "edit":
            phase.label = f"Edited {_file_list(phase.files) or 'files'}"
    return phases


def _phase_of(call: ToolCall, done_todos: set[str], created_tasks: list[str]) -> Phase | None:
    name = call.name
    if name in ("TodoWrite", "TaskCreate", "TaskUpdate"):
        items = [i for i in _todo_items(call, created_tasks) if i and i not in done_todos]
        done_todos.update(items)
        return Phase("todo", "Done", 3, items=items[:4]) if items else None
    if name in READ_TOOLS:
        path = call.file_path or str(call.input.get("file_path") or call.input.get("path") or "")
        return Phase("read", "", 0, files=[base_name(path)])
    if name in WEB_TOOLS:
        query = str(call.input.get("query") or "")[:100]
        return Phase(
            "web", f"Searched the web for {query}" if query else "Read web documentation", 1, key="web"
        )
    if name in TASK_TOOLS:
        description = str(call.input.get("description") or "")[:120]
        return Phase(
            "task", f"Delegated to a subagent: {description}" if description else "Delegated to a subagent", 2
        )
    if name in EDIT_TOOLS and is_edit(call):
        if call.is_error:
            return None  # a failed edit (string not found) changed nothing
        return Phase("edit", "", 2, files=[base_name(call.file_path or "")])
    command = shell_command(call) if (name in SHELL_TOOLS or call.command) else ""
    if not command:
        return None
    label = command_label(command)
    result = check_result(call)
    if result is not None:
        failed = result is CheckResult.FAILED
        label = command_label(check_segment(command)) or label  # a formatter before the check is not it
        text = f"Ran {label}: " + ("failed" if failed else "passed")
        key = normalise_command(command)
        return Phase("check", text, 3, failed=failed, key=key, output=call.output if failed else "")
    if any(_REVERT_RE.match(seg) for seg in command_segments(command)):
        return Phase("revert", "Reverted uncommitted changes", 2, key="revert")
    if is_edit(call):
        return Phase("edit", "", 2, files=[])
    if _QUIET_COMMANDS.match(command.strip()):
        return None
    failed = not exited_ok(call)
    description = str(call.input.get("description") or "")[:120]
    text = description or (f"Ran {label}" if label else "")
    if not text:
        return None
    return Phase(
        "shell", text + (": failed" if failed else ""), 1, failed=failed, key=normalise_command(command)
    )


def select_steps(phases: list[Phase], limit: int = 12) -> list[str]:
    """At most `limit` step lines in order, dropping the least telling phases from the middle first."""
    last_check = max((i for i, p in enumerate(phases) if p.kind == "check"), default=-1)
    chosen = []
    seen_labels: set[str] = set()
    priorities = []
    for index, phase in enumerate(phases):
        routine = phase.kind == "check" and not phase.failed and index != last_check
        if routine and phase.label in seen_labels:
            priorities.append(-1)  # a passing check seen before says nothing new: never shown
        else:  # a repeated line or a routine passing check is the least telling
            priorities.append(0 if phase.label in seen_labels or routine else phase.priority)
            chosen.append(index)
        seen_labels.add(phase.label)
    for priority in range(4):
        if len(chosen) <= limit:
            break
        middle = [i for i in chosen[1:-1] if priorities[i] == priority]
        excess = len(chosen) - limit
        drop = set(middle[:excess]) if excess < len(middle) else set(middle)
        chosen = [i for i in chosen if i not in drop]
    chosen = chosen[: limit - 1] + chosen[-1:] if len(chosen) > limit else chosen
    return [text for text in (phases[i].text() for i in chosen) if text]


def critical_checks(phases: list[Phase], limit: int = 4) -> list[str]:
    """Failing checks that were followed by a change of course, and the last check of the session."""
    found: list[str] = []
    seen: set[str] = set()
    for index, phase in enumerate(phases):
        if phase.kind != "check" or not phase.failed or phase.key in seen:
            continue
        if any(p.kind in ("edit", "revert") for p in phases[index + 1 :]):
            seen.add(phase.key)
            found.append(phase.text().replace("Ran ", "", 1) + ", which changed the course of the fix")
    last_check = next((p for p in reversed(phases) if p.kind == "check"), None)
    if last_check is not None:
        verdict = "failed" if last_check.failed else "passed"
        name = safe_line(last_check.label.removeprefix("Ran ").split(":", 1)[0], 80) or "the last check"
        found = [*found[: limit - 1], f"Final check: {name} {verdict}"]
    return [line for line in found[:limit] if line and not line.startswith(",")]


def tags_from(events: list[Event], files: list[str]) -> Counter[str]:
    tags: Counter[str] = Counter()
    for path in files:
        name = path.rsplit("/", 1)[-1].lower()
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        if suffix in EXTENSION_TAGS:
            tags[EXTENSION_TAGS[suffix]] += 1
        if ".github/workflows" in path:
            tags["github-actions"] += 3
        if name.startswith("dockerfile"):
            tags["docker"] += 1
    for event in events:
        if event.kind == "tool" and event.tool is not None:
            command = shell_command(event.tool)
            if command:
                tags.update(command_tags(command))
    return tags


@lru_cache(maxsize=4096)  # a session runs the same few commands again and again
def command_tags(command: str) -> tuple[str, ...]:
    """A tag for each segment that runs a known tool (`npx vitest` runs vitest), in order."""
    found: list[str] = []
    for segment in command_segments(command):
        tokens = unwrap(segment).split()
        head = tokens[0] if tokens else ""
        if head == "npx" and len(tokens) > 1:
            head = tokens[1]
        if head in COMMAND_TAGS:
            found.append(COMMAND_TAGS[head])
    return tuple(found)
