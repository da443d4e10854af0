"""The `/remember` slash command for Claude Code: the agent writes its own session's card.

Installed by `episodic setup claude-code` as `~/.claude/commands/remember.md`. Claude Code replaces
`${CLAUDE_SESSION_ID}` in a command file with the current session's id and `$ARGUMENTS` with what the user
typed after the command (both checked with claude 2.1.197: the expanded text reached the model with the
session's UUID), so the agent passes the right session_id to `record_episode` without guessing.
"""

from __future__ import annotations

from pathlib import Path

from episodic.mcp import SERVER_NAME

COMMAND_NAME = "remember"
RECORD_TOOL = f"mcp__{SERVER_NAME}__record_episode"  # how Claude Code names an MCP server's tool

REMEMBER_COMMAND = f"""---
description: Save this session as an episodic memory card (record_episode) for future agents
argument-hint: [what to emphasise, optional]
allowed-tools: {RECORD_TOOL}
disable-model-invocation: true
---
Write the memory card of THIS session and save it by calling the `record_episode` tool of the
`{SERVER_NAME}` MCP server once, with `session_id` set to `${{CLAUDE_SESSION_ID}}`.

A future agent will find this card when it meets a similar problem, months from now, without any of
today's context. Write it for that agent. The user's note, if any: $ARGUMENTS

Card rules:
- problem: the SYMPTOM first, as the user met it and as someone would search for it (the error seen,
  the wrong behaviour, the goal), in plain words. Not a copy of the first request.
- steps: what was done, in order, one short line each. The METHOD, not the code.
- key_decisions: the choices that shaped the work, each with its reason.
- insight: the one thing worth knowing next time: the root cause, or the lesson.
- dead_ends: what was tried, failed and was abandoned, and why it failed.
- misleading_intuitions: what looked guilty but was not.
- critical_checks: the checks (tests, commands, observations) whose result changed the course.
- tags: languages, frameworks, tools and the kind of problem, lower case.
- No code, no file paths, no stack traces, no commands copied verbatim, no secrets. Name things in
  words ("the retry wrapper in the HTTP client"), not as a path or a snippet. The server rejects
  cards that break this rule; if it does, rewrite the fields it names and call the tool again.
- outcome, on evidence in this session only, never on your own impression:
  - verified: a check passed AFTER the last change (tests, a build, a command that failed before and
    now succeeds), or the user confirmed that it works;
  - unverified: changes were made but nothing after the last change shows that they work
    ("should be fixed now" is not evidence);
  - failed: the last check after the last change failed, or the user said it is still broken;
  - informational: no change was attempted (a question, a review, research, a plan).
  When unsure between verified and unverified, choose unverified. The server checks the transcript
  and downgrades an unsupported verified.

If the tool is not available or refuses the call (for example a read-only token), tell the user
what it said; do not retry with a different session id.
"""


def remember_command_path(home: Path) -> Path:
    """Claude Code's user-level commands folder (`~/.claude/commands`)."""
    return home / ".claude" / "commands" / f"{COMMAND_NAME}.md"
