"""The baselines' building blocks (BM25, raw text, exchanges) and the system registry."""

from __future__ import annotations

import math

import pytest
from episodic.cards.opening import exchanges
from episodic.evaluation.corpus import EvalCorpus
from episodic.evaluation.systems import SYSTEMS, RetrievalSystem, register_system, select_systems
from episodic.evaluation.systems.bm25 import BM25Index, tokenize
from episodic.evaluation.systems.raw import session_text
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import Event, SessionSource, ToolCall, Trajectory


def test_tokenize_splits_identifiers_and_lowercases() -> None:
    assert tokenize("Run read_file() on src/App.tsx, 2x") == [
        "run",
        "read",
        "file",
        "on",
        "src",
        "app",
        "tsx",
        "2x",
    ]


def test_bm25_matches_the_okapi_formula() -> None:
    docs = [
        ["heap", "memory", "build"],
        ["docker", "postgres"],
        ["memory", "leak", "leak", "worker", "pool", "drain"],
    ]
    index = BM25Index(docs)
    avg = (3 + 2 + 6) / 3
    idf_memory = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_heap = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected_doc0 = idf_heap * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / avg)) + idf_memory * 1 * 2.2 / (
        1 + 1.2 * (0.25 + 0.75 * 3 / avg)
    )
    scores = index.scores(["heap", "memory", "memory", "unknown"])  # repeated terms count once
    assert scores[0] == pytest.approx(expected_doc0)
    assert scores[1] == 0.0
    assert 0 < scores[2] < scores[0]  # shares only the common term, and is longer


def _trajectory() -> Trajectory:
    tool = ToolCall(id="t1", name="Bash", command="npm run build", output="JavaScript heap out of memory")
    read = ToolCall(
        id="t2", name="Read", input={"file_path": "/p/src/charts.ts"}, output="export const x = 1"
    )
    events = [
        Event(kind="prompt", text="build crashes"),
        Event(kind="assistant", text="Let me run it."),
        Event(kind="tool", tool=tool),
        Event(kind="assistant", text="Heap exhausted."),
        Event(kind="assistant", text="sub-agent text", agent_id="a1"),
        Event(kind="thinking", text="private reasoning"),
        Event(kind="prompt", text="and the charts?"),
        Event(kind="tool", tool=read),
    ]
    return Trajectory(
        session_id="s",
        source=SessionSource(session_key="s", main_path="/p/s.jsonl"),
        source_sha256="0" * 64,
        events=events,
        tool_calls=[tool, read],
    )


def test_session_text_holds_prompts_answers_and_tool_calls() -> None:
    text = session_text(_trajectory())
    for part in (
        "build crashes",
        "Heap exhausted.",
        "npm run build",
        "heap out of memory",
        "/p/src/charts.ts",
        "export const",
    ):
        assert part in text
    assert "private reasoning" not in text


def test_exchanges_pair_each_prompt_with_the_following_answers() -> None:
    found = exchanges(_trajectory(), limit=20)
    assert found == [
        "User: build crashes\nAssistant: Let me run it.\nAssistant: Heap exhausted.",
        "User: and the charts?",
    ]
    assert exchanges(_trajectory(), limit=1) == found[:1]
    assert exchanges(_trajectory(), limit=20, max_chars=10) == ["User: buil", "User: and "]


def test_a_new_system_slots_in_by_registering() -> None:
    class FirstSession(RetrievalSystem):
        name = "test-first-session"
        description = "always the first session"

        def build(self, corpus: EvalCorpus) -> None:
            self.ids = corpus.session_ids

        def rank(self, query: str) -> list[str]:
            return self.ids

    try:
        register_system(FirstSession)
        assert select_systems(["test-first-session"]) == [FirstSession]
        with pytest.raises(ValueError, match="already registered"):

            class Clash(FirstSession):
                pass

            register_system(Clash)
    finally:
        SYSTEMS.pop("test-first-session", None)


def test_default_selection_and_unknown_names() -> None:
    names = [cls.name for cls in select_systems(None)]
    assert names[:5] == ["struct", "semantic", "reflect", "hybrid", "hybrid-verified"]
    assert {"raw-bm25", "raw-exchanges"} <= set(names)
    with pytest.raises(InvalidArgumentError, match="unknown system"):
        select_systems(["struct", "nope"])
