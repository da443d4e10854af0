"""The LLM path: a `DreamModel` port (one JSON-schema-forced call) and its coding-agent CLI adapter (the
Bedrock one is `aws.dream_llm`).

The model sees the thread's cards (the distilled statements it starts from), its survey blocks and one
budgeted transcript survey (never a raw transcript
whole). Its answer is validated against `ThreadExtract`; a failed call or an invalid answer fails the phase
with the reason (`DreamPhaseError`), it is never patched over with offline text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from episodic.dream.extract import Claim, ThreadExtract
from episodic.dream.port import DreamModel
from episodic.dream.source import SessionDigest
from episodic.plumbing.marker import DISTILLER_MARKER

EXTRACT_SYSTEM = (
    "You read one thread of a team's coding-agent sessions, from its sessions' cards (distilled: problem, "
    "key decisions, insight, dead ends, misleading intuitions, checks) and a weekly survey, and pull out what it "
    "decided, what it left unfinished (with the carry-over cost: what the next session pays for it), what is "
    "worth remembering and what is at risk. Every claim lists the full session ids it came from, taken from "
    "the cards or the survey; say each decision once. Mark an insight verified only when the survey shows a passing check or the user confirming. "
    "Be specific: name the decision, the file area, the task. No code, no secrets."
)
NARRATIVE_SYSTEM = (
    "You write the narrative of a weekly dreaming-cycle record: three to five plain sentences on what the week "
    "was about, in the voice and density of the exemplar record given. Each sentence lists the session ids "
    "it draws on, taken only from the extracts given."
)


class Narrative(BaseModel):
    sentences: list[Claim] = Field(min_length=1, max_length=6)


CARD_FIELDS = ("problem", "key_decisions", "insight", "dead_ends", "misleading_intuitions", "critical_checks")


def cards_block(sessions: Sequence[SessionDigest]) -> str:
    """The thread's cards (already distilled and scrubbed), one JSON object per session."""
    rows = []
    for digest in sessions:
        card = digest.record.card
        row: dict[str, Any] = {"session": digest.session_id, "outcome": card.outcome.value}
        row["day"] = digest.started_at.date().isoformat() if digest.started_at else "undated"
        row.update({name: getattr(card, name) for name in CARD_FIELDS if getattr(card, name)})
        rows.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(rows)


def extract_prompt(survey_blocks: str, deep_survey: str, cards: str = "") -> str:
    return (
        f"{DISTILLER_MARKER}\n\nTHE THREAD'S CARDS (one per session, distilled; start from these):\n"
        f"{cards or '(none)'}\n\n"
        f"THE THREAD'S SESSIONS (from the week's survey):\n{survey_blocks}\n\n"
        f"DEEPER DETAIL (one session of the thread):\n{deep_survey or '(none)'}\n"
    )


def narrative_prompt(exemplar: str, week: str, extracts: list[ThreadExtract]) -> str:
    body = json.dumps([e.model_dump() for e in extracts], ensure_ascii=False)
    return f"{DISTILLER_MARKER}\n\nEXEMPLAR RECORD:\n{exemplar}\n\nWEEK {week}, PROMOTED THREADS:\n{body}\n"


class AgentCliDreamModel(DreamModel):
    """The configured coding agent's CLI (Claude Code, Codex CLI or Gemini CLI) with the distiller's own
    headless call (no tools, hooks or MCP servers), the dream's schema and system prompt."""

    def __init__(self, distiller: Any) -> None:
        self.distiller = distiller  # a distill.agent_cli.AgentCliDistiller: its CLI, model, timeout, checks
        self.id = f"{distiller.info.kind}:{distiller.model or 'default'}"

    def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
        return self.distiller.complete(system, prompt, schema)


ClaudeCodeDreamModel = AgentCliDreamModel  # its first name


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The model's schema with its `$defs` inlined (structured-output APIs reject `$ref`)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
        return {k: resolve(v) for k, v in node.items() if k != "$defs"}

    return resolve(schema)  # type: ignore[no-any-return]


def extract_schema() -> dict[str, Any]:
    return inline_refs(ThreadExtract.model_json_schema())


def narrative_schema() -> dict[str, Any]:
    return inline_refs(Narrative.model_json_schema())
