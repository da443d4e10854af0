"""Markers that keep this project's own text out of its own index (stdlib only: the hook imports it)."""

from __future__ import annotations

import re

# Wraps every card the prompt hook injects; the parser strips it so injected memory is never re-indexed.
INJECTED_OPEN = "<episodic-memory-context data-origin=episodic-7f3a>"
INJECTED_CLOSE = "</episodic-memory-context>"
INJECTED_RE = re.compile(re.escape(INJECTED_OPEN) + r".*?(?:" + re.escape(INJECTED_CLOSE) + r"|\Z)", re.S)

# Put at the top of every prompt an LLM distiller receives: a transcript holding it is a distiller run.
DISTILLER_MARKER = "[episodic-distiller-run: this conversation distills a past session into a memory card]"


_MARKER_TAG_RE = re.compile(r"<(\s*/?\s*)(episodic-memory-context)", re.I)


def escape_markers(text: str) -> str:
    """Content (e.g. an agent-written card) can never open or close the injected block itself."""
    return _MARKER_TAG_RE.sub(r"&lt;\1\2", text)


def wrap_injected(text: str) -> str:
    return f"{INJECTED_OPEN}\n{escape_markers(text)}\n{INJECTED_CLOSE}"


# Gemini CLI appends a hook's context to the tool result as `<hook_context>…</hook_context>`, with every < and >
# of the context turned into &lt; and &gt;: the failure hook's entry, as the session file keeps it
_ESCAPED_OPEN = INJECTED_OPEN.replace("<", "&lt;").replace(">", "&gt;")
_ESCAPED_CLOSE = INJECTED_CLOSE.replace("<", "&lt;").replace(">", "&gt;")
HOOK_CONTEXT_RE = re.compile(
    r"\s*<hook_context>"
    + re.escape(_ESCAPED_OPEN)
    + r".*?"
    + re.escape(_ESCAPED_CLOSE)
    + r"\s*</hook_context>",
    re.S,
)


def strip_hook_context(text: str) -> str:
    """A tool result without the injected entry Gemini CLI appended to it (the rest of the result kept)."""
    return HOOK_CONTEXT_RE.sub("", text) if _ESCAPED_OPEN in text else text


def strip_injected(text: str) -> tuple[str, int]:
    """Remove injected memory blocks; returns the text and how many were removed."""
    if INJECTED_OPEN not in text:
        return text, 0
    stripped, count = INJECTED_RE.subn("", text)
    return stripped, count
