"""The local judge (episodic.judge): the cross-encoder from the installed, pinned model files; a changed
file is refused and search keeps the first stage's order; a second stage past its deadline leaves the
first stage's answer (issue 52 item 14)."""

from __future__ import annotations

import logging
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodic.assembly import build_reranker
from episodic.cards.write import embed_card
from episodic.core.confidence import shown
from episodic.core.search import search_traces
from episodic.judge.model import (
    MODEL_FILES,
    CrossEncoder,
    ModelProblem,
    check_model_dir,
    default_model_dir,
    file_sha256,
)
from episodic.judge.reranker import JudgeWeights, LocalReranker
from episodic.kernel.memory import Memory
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome, SearchFilters, SearchHit
from episodic.kernel.ports import Reranker
from episodic.kernel.settings import load_settings
from kits.mcp_testkit import ALPHA, build_memory

INSTALLED = default_model_dir()
needs_model = pytest.mark.skipif(
    not INSTALLED.is_dir(), reason=f"the judge's model is not installed at {INSTALLED} (scripts/install)"
)

QUERY = "pytest says fixture 'db_session' not found when I run the tests from the repo root"
RELEVANT = (
    "pytest could not find the db_session fixture because conftest.py sat in a sub-folder that is not on "
    "the collection path; moving conftest.py to the tests root made the fixture visible."
)
UNRELATED = "The CloudFront distribution served a stale index.html after deploy; an invalidation fixed it."

CARDS = {
    "s-fixture": ("pytest fixture db_session not found from the repo root", RELEVANT),
    "s-cdn": ("stale index.html from CloudFront after a deploy", UNRELATED),
    "s-docker": (
        "docker build cache misses on every CI run",
        "Order the Dockerfile so requirements come first.",
    ),
}


def llm_record(session_id: str, problem: str, insight: str) -> CardRecord:
    return CardRecord(
        card=Card(problem=problem, insight=insight, outcome=Outcome.VERIFIED),
        session_id=session_id,
        tenant_id=ALPHA,
        started_at=datetime(2026, 11, 2, 9, tzinfo=UTC),
        source_sha256="0" * 64,
        distiller=DistillerInfo(kind="claude-code"),
        indexed_at=datetime(2026, 11, 2, 10, tzinfo=UTC),
    )


def altered_copy(tmp_path: Path, name: str = "tokenizer_config.json") -> Path:
    """The installed model folder with one file changed by one byte (model.onnx linked, not copied)."""
    copy = tmp_path / "model"
    copy.mkdir()
    for file in MODEL_FILES:
        if file == "model.onnx" and name != file:
            (copy / file).symlink_to(INSTALLED / file)
        else:
            shutil.copyfile(INSTALLED / file, copy / file)
    data = bytearray((copy / name).read_bytes())
    data[-2] ^= 0x01
    (copy / name).write_bytes(bytes(data))
    return copy


@needs_model
def test_the_installed_model_is_the_pinned_one_and_ranks_the_relevant_card_first() -> None:
    check_model_dir(INSTALLED)
    assert file_sha256(INSTALLED / "model.onnx") == MODEL_FILES["model.onnx"]
    logits = CrossEncoder(INSTALLED).scores(QUERY, [UNRELATED, RELEVANT], max_tokens=160)
    assert logits[1] > logits[0] + 2.0  # a wide margin, not a coin toss


@needs_model
@pytest.mark.parametrize("name", ["tokenizer_config.json", "vocab.txt"])
def test_a_changed_model_file_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ModelProblem, match=f"{name} .* not the pinned file"):
        CrossEncoder(altered_copy(tmp_path, name)).load()


def test_a_missing_model_is_named_with_its_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelProblem, match=r"not installed .* scripts/install"):
        check_model_dir(tmp_path / "absent")
    settings = load_settings(home=tmp_path, reranker="local", judge_model_dir=tmp_path / "absent")
    assert build_reranker(settings) is None  # search runs the first stage alone


def memory_with_cards(tmp_path: Path, **settings: Any) -> Memory:
    memory = build_memory(load_settings(home=tmp_path, embedder="hashing", min_similarity=-1.0, **settings))
    memory.store.ensure_manifest(memory.manifest)
    for session_id, (problem, insight) in CARDS.items():
        record = llm_record(session_id, problem, insight)
        memory.store.upsert(record, embed_card(memory, record.card), memory.manifest)
    return memory


@needs_model
def test_search_with_the_judge_puts_the_relevant_card_first(tmp_path: Path) -> None:
    memory = memory_with_cards(tmp_path, reranker="local", rerank_seconds=0.0)
    memory.reranker = build_reranker(memory.settings)
    assert isinstance(memory.reranker, LocalReranker)
    memory.reranker.weights = JudgeWeights(llm=5.0)  # the judge alone decides here
    hits = search_traces(memory, ALPHA, "CloudFront kept serving the old index.html after I deployed", k=3)
    assert hits[0].record.session_id == "s-cdn" and hits[0].judge is not None and hits[0].judge > 0.5
    assert hits[-1].judge is not None and hits[-1].judge < hits[0].judge


@needs_model
def test_an_altered_model_falls_back_to_the_first_stage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = memory_with_cards(tmp_path, rerank_seconds=0.0)
    first = search_traces(memory, ALPHA, QUERY, k=3)
    memory.reranker = LocalReranker(
        CrossEncoder(altered_copy(tmp_path, "model.onnx")), weights=JudgeWeights(llm=5.0)
    )
    with caplog.at_level(logging.ERROR):
        judged = search_traces(memory, ALPHA, QUERY, k=3)
        again = search_traces(memory, ALPHA, QUERY, k=3)
    assert [h.record.session_id for h in judged] == [h.record.session_id for h in first]
    assert [h.score for h in judged] == [h.score for h in first] and all(h.judge is None for h in judged)
    assert again == judged
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        len(errors) == 1 and "model.onnx" in errors[0] and "first stage" in errors[0]
    )  # once, not per search


class StuckReranker(Reranker):
    """A second stage that answers only when cancelled (a judge on a saturated CPU, a slow Bedrock call)."""

    name = "stuck"
    depth = 20

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:  # type: ignore[override]
        self.cancelled.wait(timeout=30)
        return list(reversed(hits))

    def cancel(self) -> None:
        self.cancelled.set()


def test_a_late_second_stage_leaves_the_first_stages_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = memory_with_cards(tmp_path, rerank_seconds=0.05)
    first = search_traces(memory, ALPHA, QUERY, k=3)
    stuck = StuckReranker()
    memory.reranker = stuck
    with caplog.at_level(logging.WARNING):
        late = search_traces(memory, ALPHA, QUERY, k=3)
    assert late == first and stuck.cancelled.is_set()
    assert any("timed out" in r.getMessage() and "first stage" in r.getMessage() for r in caplog.records)


def test_a_failing_second_stage_leaves_the_first_stages_answer(tmp_path: Path) -> None:
    class Broken(StuckReranker):
        def rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:  # type: ignore[override]
            raise RuntimeError("boom")

    memory = memory_with_cards(tmp_path, rerank_seconds=0.5)
    first = search_traces(memory, ALPHA, QUERY, k=3)
    memory.reranker = Broken()
    assert search_traces(memory, ALPHA, QUERY, k=3) == first


def test_with_a_judge_bar_the_judge_decides_the_full_card() -> None:
    from episodic.core.confidence import ConfidenceRule
    from episodic.kernel.models import Confidence

    rule = ConfidenceRule(3.5, 3.25, 0.25, judge_strong=0.8)
    record = llm_record("s-1", "a problem", "an insight")

    def tier(score: float, similarity: float, judge: float | None) -> Confidence | None:
        return rule.tier(
            SearchHit(record=record, score=score, similarity=similarity, pool_size=40, judge=judge)
        )

    assert tier(3.3, 0.45, 0.9) == Confidence.STRONG  # sure, and close enough for a pointer: a card
    assert tier(6.0, 0.70, 0.5) == Confidence.WEAK  # high cosine and score, the judge unsure: a pointer
    assert tier(3.3, 0.38, 0.99) != Confidence.STRONG  # the judge cannot lift a far card
    assert tier(3.6, 0.56, None) == Confidence.STRONG  # not judged: the fused score's rule


@needs_model
def test_a_judge_stopped_at_its_deadline_stays_on_for_the_next_search(tmp_path: Path) -> None:
    memory = memory_with_cards(tmp_path, rerank_seconds=0.0)
    first = search_traces(memory, ALPHA, QUERY, k=3)
    encoder = CrossEncoder(INSTALLED)
    reranker = LocalReranker(encoder, weights=JudgeWeights(llm=5.0))
    memory.reranker = reranker
    encoder.load()
    session = encoder._session

    class Stopped:  # the run a deadline terminated, as onnxruntime reports it
        def run(self, outputs: object, feed: object, run: Any) -> object:
            run.terminate = True
            raise RuntimeError("Exiting due to terminate flag being set to true.")

    encoder._session = Stopped()
    assert search_traces(memory, ALPHA, QUERY, k=3) == first
    assert reranker.disabled is None
    encoder._session = session
    judged = search_traces(memory, ALPHA, "CloudFront kept serving the old index.html after I deployed", k=3)
    assert judged[0].record.session_id == "s-cdn" and judged[0].judge is not None


def test_a_judged_hit_the_judge_rules_out_is_faint_not_a_pointer() -> None:
    from episodic.core.confidence import ConfidenceRule
    from episodic.kernel.models import Confidence

    rule = ConfidenceRule(3.5, 3.25, 0.25, judge_strong=0.5, judge_weak=0.002)
    record = llm_record("s-1", "a problem", "an insight")

    def tier(score: float, similarity: float, judge: float | None) -> Confidence | None:
        return rule.tier(
            SearchHit(record=record, score=score, similarity=similarity, pool_size=40, judge=judge)
        )

    assert tier(3.3, 0.45, 0.01) == Confidence.WEAK  # unsure but not ruled out: still a pointer
    assert tier(3.3, 0.45, 0.001) == Confidence.FAINT  # ruled out: only for an agent that asks
    assert tier(1.0, 0.30, 0.001) is None  # below the faint bars it stays dropped
    assert tier(3.3, 0.45, None) == Confidence.WEAK  # not judged: the fused score's rule


class FixedJudge(Reranker):
    """A second stage that keeps the order and gives each card the judge's probability listed for it."""

    name = "fixed"
    depth = 20

    def __init__(self, probabilities: dict[str, float]) -> None:
        self.probabilities = probabilities

    def rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:  # type: ignore[override]
        return [h.model_copy(update={"judge": self.probabilities.get(h.record.session_id)}) for h in hits]


@pytest.mark.parametrize(("judge_weak", "pointed"), [(0.002, {"s-docker"}), ("off", {"s-docker", "s-cdn"})])
def test_the_hook_points_to_no_card_the_judge_rules_out(
    tmp_path: Path, judge_weak: float | str, pointed: set[str]
) -> None:
    from episodic.hooks import server_client as hook_server
    from episodic.hooks.packing import is_strong

    # the judge's own bars alone (the full-card gate has its own test)
    memory = memory_with_cards(tmp_path, rerank_seconds=0.0, judge_weak=judge_weak, judge_gate="off")
    memory.reranker = FixedJudge({"s-fixture": 0.9, "s-cdn": 0.0005})  # s-docker: another card kind
    hits = search_traces(memory, ALPHA, QUERY, k=3, filters=SearchFilters(include_unverified=False))
    results = [
        {
            "session_id": h.record.session_id,
            "card": {"outcome": "verified"},
            "confidence": h.confidence and h.confidence.value,
        }
        for h in shown(hits, include_weak=True)
    ]
    selected = hook_server.select_hits(results, approved_only=False)
    assert [h["session_id"] for h in selected if is_strong(h)] == ["s-fixture"]
    assert {h["session_id"] for h in selected if not is_strong(h)} == pointed


@needs_model
def test_warming_loads_the_model_before_the_first_search_and_an_altered_one_turns_the_judge_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sound = CrossEncoder(default_model_dir())
    LocalReranker(sound).warm()
    assert sound._session is not None  # loaded at warm-up, not inside the first search's deadline
    altered = LocalReranker(CrossEncoder(altered_copy(tmp_path, "model.onnx")))
    with caplog.at_level(logging.ERROR):
        altered.warm()
    assert altered.disabled and "model.onnx" in altered.disabled
    assert any("first stage" in r.getMessage() for r in caplog.records)


def test_the_mcp_lambda_warms_its_second_stage_at_init(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lambdas.mcp.handler as mcp_handler

    class Counting(StuckReranker):
        warmed = 0

        def warm(self) -> None:
            Counting.warmed += 1

    settings = load_settings(home=tmp_path, embedder="hashing")
    memory = build_memory(settings)
    memory.reranker = Counting()
    monkeypatch.setattr(mcp_handler, "build_memory", lambda settings, clients: memory)
    monkeypatch.setattr(mcp_handler, "store_search_mode", lambda store, log: None)

    class NoClients:
        def get(self, name: str) -> None:
            return None

    mcp_handler.build_runtime(settings=settings, clients=NoClients())  # type: ignore[arg-type]
    assert Counting.warmed == 1


def test_a_full_card_needs_the_gate_beyond_the_judge_and_specific_shared_words() -> None:
    from episodic.core.confidence import ConfidenceRule
    from episodic.kernel.models import Confidence

    rule = ConfidenceRule(3.5, 3.25, 0.25, judge_strong=0.5, judge_gate=0.6, min_keyword=1.0)

    def hit(sid: str, judge: float | None, keyword: float | None, score: float = 4.0) -> SearchHit:
        record = llm_record(sid, "a problem", "an insight")
        return SearchHit(
            record=record, score=score, similarity=0.6, pool_size=40, judge=judge, keyword_score=keyword
        )

    def tiers(*hits: SearchHit) -> list[Confidence | None]:
        return [h.confidence for h in rule.label(hits)]

    # sure, standing out from the next judged hit, sharing rare words: a full card
    assert tiers(hit("a", 0.999, 30.0), hit("b", 0.01, 5.0, 3.3))[0] == Confidence.STRONG
    # as sure, but a neighbour the judge finds as relevant and few rare words: the topic, not the answer
    assert tiers(hit("a", 0.999, 3.0, 3.6), hit("b", 0.999, 3.0, 3.6))[0] == Confidence.WEAK
    # the same topic in common words only (the keyword half weighs them near zero): never a full card
    assert tiers(hit("a", None, 1e-5, 6.0))[0] == Confidence.WEAK
    # a store without a keyword half cannot say: the other bars decide
    assert tiers(hit("a", None, None, 6.0))[0] == Confidence.STRONG
