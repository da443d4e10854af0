"""The write path's idempotency rules: content hash + distiller id, and better cards are never replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.aws.pipeline import TranscriptObject, distill_transcript, parse_transcript_key
from episodic.cards.write import store_card
from episodic.core.ingest import index_sessions, ingest_one
from episodic.distill.heuristic import HeuristicDistiller
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.memory import Memory
from episodic.kernel.models import Card, DistillerInfo, Trajectory
from episodic.kernel.ports import Distiller, DistillResult
from episodic.kernel.settings import load_settings

DEMO = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"


class VersionedHeuristic(Distiller):
    """The heuristic distiller under another version id (what a release of a new distiller looks like)."""

    def __init__(self, version: str) -> None:
        self.inner = HeuristicDistiller()
        self.info = DistillerInfo(kind="heuristic", model=version)
        self.calls = 0

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        self.calls += 1
        return self.inner.distill(trajectory, survey)


class Failing(Distiller):
    info = DistillerInfo(kind="bedrock", model="m")

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        raise RuntimeError("model exploded")


def memory_with(distiller: Distiller) -> Memory:
    return build_memory(load_settings(), embedder=HashingEmbedder(384), distiller=distiller)


@pytest.mark.usefixtures("episodic_home")
def test_same_distiller_is_unchanged_a_new_version_redistills() -> None:
    first = VersionedHeuristic("v1")
    assert index_sessions(memory_with(first), [str(DEMO)], "local").indexed == 6
    again = index_sessions(memory_with(VersionedHeuristic("v1")), [str(DEMO)], "local")
    assert (again.indexed, again.unchanged) == (0, 6)
    upgraded = index_sessions(memory_with(VersionedHeuristic("v2")), [str(DEMO)], "local")
    assert (upgraded.indexed, upgraded.replaced) == (6, 6)


class AnotherModel(VersionedHeuristic):
    """An LLM distiller under a chosen model: switching the model is a choice, not a new card format."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.info = DistillerInfo(kind="claude-code", model=model)


@pytest.mark.usefixtures("episodic_home")
def test_another_llm_model_redistils_only_grown_sessions() -> None:
    assert index_sessions(memory_with(AnotherModel("haiku")), [str(DEMO)], "local").indexed == 6
    switched = AnotherModel("sonnet")
    again = index_sessions(memory_with(switched), [str(DEMO)], "local")
    assert (again.indexed, again.unchanged, switched.calls) == (0, 6, 0)


@pytest.mark.usefixtures("episodic_home")
def test_an_agent_written_card_is_kept_and_failures_are_recorded_for_a_retry() -> None:
    memory = memory_with(VersionedHeuristic("v1"))
    index_sessions(memory, [str(DEMO)], "local")
    record = next(iter(memory.store.iter_records("local")))
    card = Card(problem="a self-written card", outcome="unverified")
    store_card(memory, "local", card, session_id=record.session_id, distiller=DistillerInfo(kind="self"))
    rerun = index_sessions(memory_with(VersionedHeuristic("v2")), [str(DEMO)], "local")
    assert rerun.kept_better == 1 and rerun.indexed == 5
    assert memory.store.get("local", record.session_id).card.problem == "a self-written card"  # type: ignore[union-attr]

    failing = memory_with(Failing())
    report = index_sessions(failing, [str(DEMO)], "local")
    assert report.indexed == 0 and len(report.failed) == 5  # the self card outranks bedrock: kept
    assert all("model exploded" in reason for _, reason in report.failed)
    assert failing.ledger is not None and len(failing.ledger.failures("local")) == 5
    assert memory.store.count("local") == 6  # nothing was lost or half-indexed


class AgentWritesMeanwhile(Distiller):
    """A slow distiller during whose call the agent records its own card for the same session (the race)."""

    info = DistillerInfo(kind="bedrock", model="m")

    def __init__(self) -> None:
        self.memory: Memory | None = None

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        assert self.memory is not None
        card = Card(problem="the agent's own card", outcome="unverified")
        store_card(
            self.memory, "acme", card, session_id=trajectory.session_id, distiller=DistillerInfo(kind="self")
        )
        return HeuristicDistiller().distill(trajectory, survey)


def _s3_session(name: str = "home-dev-webshop") -> TranscriptObject:
    path = next((DEMO / name).glob("*.jsonl"))
    where = parse_transcript_key(f"transcripts/acme/{path.name}", "transcripts/")
    assert where is not None
    return TranscriptObject(bucket="bucket", where=where, files={path.name: path.read_bytes()})


@pytest.mark.usefixtures("episodic_home")
def test_ingest_one_keeps_a_card_the_agent_wrote_while_distilling() -> None:
    racing = AgentWritesMeanwhile()
    memory = racing.memory = memory_with(racing)
    loaded = memory.source.load(next(iter(memory.source.discover([str(DEMO / "home-dev-webshop")]))))
    outcome = ingest_one(memory, "acme", loaded)
    assert outcome.status == "kept_better"
    record = memory.store.get("acme", outcome.session_id or "")
    assert record is not None and record.card.problem == "the agent's own card"


@pytest.mark.usefixtures("episodic_home")
def test_the_aws_path_applies_the_same_kept_better_rule() -> None:
    racing = AgentWritesMeanwhile()
    memory = racing.memory = memory_with(racing)
    outcome = distill_transcript(_s3_session(), memory=memory, s3_client=None)  # nothing to archive
    assert (outcome.status, outcome.archive_key) == ("kept_better", None)


@pytest.mark.usefixtures("episodic_home")
def test_the_aws_path_records_any_failure_with_its_s3_location_and_reraises() -> None:
    memory = memory_with(Failing())  # RuntimeError, not an EpisodicError: recorded all the same
    transcript = _s3_session()
    with pytest.raises(RuntimeError, match="model exploded"):
        distill_transcript(transcript, memory=memory, s3_client=None)
    assert memory.ledger is not None
    (failure,) = memory.ledger.failures("acme")
    assert failure.path == f"s3://bucket/{transcript.where.main_key}"
    assert failure.session_key == transcript.where.session_key
    assert failure.reason == "internal error: RuntimeError: model exploded"
