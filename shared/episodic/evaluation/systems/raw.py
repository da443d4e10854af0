"""Baselines over raw (scrubbed) transcript text: BM25 keyword search, and best raw exchange."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from episodic.cards.opening import EXCHANGE_CHARS, exchanges
from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.systems.base import RetrievalSystem, rank_by_scores, register_system
from episodic.evaluation.systems.bm25 import BM25Index, tokenize
from episodic.kernel.models import ToolCall, Trajectory

# what keyword history search sees of a tool call: its command (or short input values) and output
_INPUT_VALUE_CHARS = 500
# raw-exchanges: the first exchanges of a session (where the problem is stated), each cut to about
# the embedder's 256-token window; keeps a 700-session corpus within the time budget
MAX_EXCHANGES_PER_SESSION = 20


def _tool_text(tool: ToolCall) -> str:
    if tool.command:
        head = tool.command
    else:
        values = [v[:_INPUT_VALUE_CHARS] for v in tool.input.values() if isinstance(v, str)]
        head = " ".join([tool.name, *values])
    return f"{head}\n{tool.output}" if tool.output else head


def session_text(trajectory: Trajectory) -> str:
    """Prompts, assistant texts, tool commands and outputs, in order (subagent work included)."""
    parts: list[str] = []
    for event in trajectory.events:
        if event.kind in ("prompt", "assistant") and event.text:
            parts.append(event.text)
        elif event.kind == "tool" and event.tool is not None:
            parts.append(_tool_text(event.tool))
    return "\n".join(parts)


@register_system
class RawBM25System(RetrievalSystem):
    name = "raw-bm25"
    description = "BM25 (Okapi, k1=1.2, b=0.75) over the scrubbed raw transcript text of each session"

    def build(self, corpus: EvalCorpus) -> None:
        self.ids = corpus.session_ids
        progress = self.context.progress
        progress.start("raw-bm25: tokenizing", len(self.ids))
        documents: list[list[str]] = []
        for session_id in self.ids:
            documents.append(tokenize(session_text(corpus.trajectories[session_id])))
            progress.advance()
        self.index = BM25Index(documents)

    def rank(self, query: str) -> list[str]:
        scores = self.index.scores(tokenize(query))
        return rank_by_scores(self.ids, scores, keep=scores > 0)  # no shared term: not retrieved


@register_system
class RawExchangesSystem(RetrievalSystem):
    name = "raw-exchanges"
    description = (
        f"embeddings of raw user→assistant exchanges (first {MAX_EXCHANGES_PER_SESSION} per session, "
        f"{EXCHANGE_CHARS} chars each), best exchange per session"
    )

    def build(self, corpus: EvalCorpus) -> None:
        self.ids = corpus.session_ids
        texts: list[str] = []
        owners: list[int] = []
        for index, session_id in enumerate(self.ids):
            for text in exchanges(corpus.trajectories[session_id], MAX_EXCHANGES_PER_SESSION):
                texts.append(text)
                owners.append(index)
        self.owners = np.array(owners, dtype=np.int64)
        self.vectors = self.context.embed(texts, "raw-exchanges: embedding")

    def _session_scores(self, query_vector: np.ndarray) -> np.ndarray:
        best = np.full(len(self.ids), -np.inf, dtype=np.float64)
        if len(self.owners):
            np.maximum.at(best, self.owners, self.vectors @ query_vector)
        return best

    def rank(self, query: str) -> list[str]:
        return self.rank_many([query])[0]

    def rank_many(self, queries: Sequence[str]) -> list[list[str]]:
        query_vectors = self.context.embedder.embed(list(queries))
        out = []
        for vector in query_vectors:
            scores = self._session_scores(vector)
            out.append(rank_by_scores(self.ids, scores, keep=np.isfinite(scores)))
        return out
