"""Context a tool injected into a user message, told from the words the user typed.

Agent orchestrators (many coding agents in parallel, one workspace each) start the first user message with
their own instruction block — `<system_instruction>You are working inside …</system_instruction>` — before
the user's request; agents add environment and project-instruction preambles (Codex: `<environment_context>`,
`# AGENTS.md instructions for …` with `<INSTRUCTIONS>`; Gemini: `<session_context>` or its plain "This is the
Gemini CLI. We are setting up the context for our chat."; Claude Code IDEs: `<ide_opened_file>`). Such a
block is recognised by its shape and name, never by a list of tools: an XML-like element whose tag names
instructions, context, environment, rules or a workspace (rules as data below), and the AGENTS/CLAUDE/GEMINI.md
headings that introduce one. `split_injected` returns the blocks and the request that is left.
"""

from __future__ import annotations

import re
from functools import lru_cache

# words a tag of injected context is made of (`system_instruction`, `environment-context`, `INSTRUCTIONS`)
CONTEXT_TAG_WORDS = frozenset(
    {
        "system", "instruction", "instructions", "context", "environment", "env", "rules", "guidelines",
        "preamble", "workspace", "memory", "policy", "policies", "directive", "directives", "persona", "ide",
        "orchestrator", "reminder",
    }
)  # fmt: skip
# tags that share a word above but hold the user's own words, or the content the user pasted
_USER_TAGS = frozenset(
    {"command-args", "command-name", "user_query", "user-query", "user_request", "request"}
)
# a closed element only: an orchestrator closes its block; an unclosed "<context>" is the user's own text
_BLOCK_RE = re.compile(r"<([A-Za-z][\w-]{1,48})(?:\s[^<>]{0,300})?>(.*?)</\1\s*>", re.S)
# a heading that introduces a project-instructions file, and the paragraph form Claude Code uses
_PREAMBLE_HEADING_RE = re.compile(
    r"(?im)^\s*(?:#{1,6}\s*(?:AGENTS|CLAUDE|GEMINI)\.md\b[^\n]*|Contents of \S*(?:AGENTS|CLAUDE|GEMINI)\.md\b[^\n]*)\n"
)
# whole-message preambles an agent writes in plain text
_PLAIN_PREAMBLE_RE = re.compile(
    r"(?is)^\s*(?:This is the Gemini CLI\. We are setting up the context for our chat\.)"
)


def _is_context_tag(tag: str) -> bool:
    low = tag.lower()
    if low in _USER_TAGS:
        return False
    words = set(re.split(r"[_-]", low))
    return low in CONTEXT_TAG_WORDS or bool(words & CONTEXT_TAG_WORDS)


@lru_cache(maxsize=1024)
def split_injected(text: str) -> tuple[tuple[str, ...], str]:
    """(the injected blocks found, the text without them). A message that is only context leaves ""."""
    if _PLAIN_PREAMBLE_RE.match(text):
        return (text.strip(),), ""
    if "<" not in text and "#" not in text and "Contents of" not in text:
        return (), text
    blocks: list[str] = []
    kept: list[str] = []
    at = 0
    for match in _BLOCK_RE.finditer(text):
        if not _is_context_tag(match.group(1)):
            continue
        before = text[at : match.start()]
        heading = _last_heading(before)
        if heading is not None:  # "# AGENTS.md instructions for …" belongs to the block after it
            blocks.append(before[heading:].strip())
            before = before[:heading]
        kept.append(before)
        blocks.append(match.group(2).strip())
        at = match.end()
    kept.append(text[at:])
    rest = "".join(kept)
    if not blocks:
        return (), text
    return tuple(b for b in blocks if b), re.sub(r"\n{3,}", "\n\n", rest).strip()


def _last_heading(before: str) -> int | None:
    """Where a project-instructions heading starts when only blank space follows it up to the block."""
    found = None
    for match in _PREAMBLE_HEADING_RE.finditer(before):
        if not before[match.end() :].strip():
            found = match.start()
    return found


# the first words of an instruction block: how a problem taken from one reads (`reads_injected`)
_INSTRUCTION_START_RE = re.compile(
    r"(?i)^\W*(?:you are (?:working|running|operating|an?\b)|you're (?:working|running|an?\b)|your (?:task|role|job) is"
    r"|this is the (?:gemini|codex|claude)|# ?(?:agents|claude|gemini)\.md|<\w*(?:instruction|context)"
    r"|the user opened the file|caveat: the messages below|current working directory:|today'?s date is)"
)


def reads_injected(sentence: str) -> bool:
    """A sentence that reads as the start of an injected instruction block, not as the user's request."""
    return bool(_INSTRUCTION_START_RE.match(sentence))
