"""Cards as files: the folder loader validates like an LLM card; export → import keeps cards and ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.cards.files import META_FILE, read_card_folder, write_card_folder
from episodic.cards.transfer import export_cards, import_cards
from episodic.cards.write import store_card
from episodic.embed.hashing import HashingEmbedder
from episodic.evaluation.cardsets import fold_of
from episodic.kernel.models import Card, DistillerInfo, Outcome, Trajectory
from episodic.kernel.settings import load_settings
from episodic.scrub import Scrubber
from episodic.store.sqlite import SQLiteStore
from kits.distill_builders import bash, edit, prompt, trajectory

GOOD = {
    "problem": "The dev server refuses to start because the port is already taken by a stale process.",
    "steps": ["Listed the processes holding the port", "Stopped the stale one and restarted the server"],
    "key_decisions": ["Kill the stale process rather than change the configured port"],
    "insight": "A crashed watcher can keep the port open long after its terminal closed.",
    "dead_ends": [],
    "misleading_intuitions": ["The firewall looked guilty but was not involved"],
    "critical_checks": ["Checking which process owned the port"],
    "outcome": "verified",
    "tags": ["node", "networking"],
}


def write(folder: Path, session_id: str, data: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def session(session_id: str, *, verified: bool) -> Trajectory:
    events = [prompt("the dev server will not start"), edit()]
    events.append(bash("npm test", "12 passed", exit_code=0) if verified else bash("ls", "x"))
    traj = trajectory(*events)
    return traj.model_copy(
        update={
            "session_id": session_id,
            "source": traj.source.model_copy(update={"session_key": session_id}),
        }
    )


SCRUB = Scrubber()


def test_a_good_file_is_read_and_kept_verified_with_evidence(tmp_path: Path) -> None:
    write(tmp_path, "s1", GOOD)
    read = read_card_folder(tmp_path, SCRUB, {"s1": session("s1", verified=True)})
    assert list(read.cards) == ["s1"] and read.invalid == []
    assert read.cards["s1"].card == Card.model_validate(GOOD)
    assert read.cards["s1"].notes == [] and read.downgraded == 0


def test_verified_without_evidence_is_downgraded(tmp_path: Path) -> None:
    write(tmp_path, "s1", GOOD)
    read = read_card_folder(tmp_path, SCRUB, {"s1": session("s1", verified=False)})
    assert read.cards["s1"].card.outcome is Outcome.UNVERIFIED
    assert read.downgraded == 1 and "downgraded" in read.cards["s1"].notes[0]


def test_invalid_files_are_reported_with_their_reason_never_used(tmp_path: Path) -> None:
    trajectories = {sid: session(sid, verified=True) for sid in ("path", "schema", "json", "big")}
    write(
        tmp_path, "path", {**GOOD, "insight": "The bug was in /home/dev/proj/src/server/main.go all along."}
    )
    write(tmp_path, "schema", {**GOOD, "outcome": "maybe"})
    write(tmp_path, "json", "{not json")
    write(tmp_path, "big", {**GOOD, "problem": "x" * 300_000})
    read = read_card_folder(tmp_path, SCRUB, trajectories)
    assert read.cards == {}
    reasons = {Path(f).stem: r for f, r in read.invalid}
    assert "file path" in reasons["path"] and "card rules" in reasons["path"]
    assert "schema" in reasons["schema"] and "outcome" in reasons["schema"]
    assert "not valid JSON" in reasons["json"]
    assert "larger than" in reasons["big"]


def test_a_session_without_a_file_is_missing_and_other_sessions_files_are_unmatched(tmp_path: Path) -> None:
    write(tmp_path, "known", GOOD)
    write(tmp_path, "stranger", GOOD)
    (tmp_path / "README.md").write_text("not a card")
    trajectories = {"known": session("known", verified=True), "absent": session("absent", verified=True)}
    read = read_card_folder(tmp_path, SCRUB, trajectories)
    assert list(read.cards) == ["known"]  # `absent` has no file: the evaluation distils it
    assert [Path(p).stem for p in read.unmatched] == ["stranger"] and read.invalid == []


def test_secrets_in_a_card_file_are_scrubbed_before_use(tmp_path: Path) -> None:
    key = "AKIA" + "Q3EGRZ7XKJ4M2WPL"
    write(tmp_path, "s1", {**GOOD, "insight": f"The deploy used the access key {key} from the old account."})
    read = read_card_folder(tmp_path, SCRUB, {"s1": session("s1", verified=True)})
    assert (
        key not in read.cards["s1"].card.insight
        and "[REDACTED:aws-access-key]" in read.cards["s1"].card.insight
    )


def test_the_split_is_deterministic_and_about_even() -> None:
    ids = [f"00000000-0000-0000-0000-{i:012d}" for i in range(400)]
    folds = [fold_of(i) for i in ids]
    assert folds == [fold_of(i) for i in ids] and set(folds) == {"A", "B"}
    assert 150 < folds.count("A") < 250
    assert fold_of("0fae0449-64d3-4788-8622-d3a47d82c14b") == fold_of("0fae0449-64d3-4788-8622-d3a47d82c14b")


@pytest.fixture()
def memory(episodic_home: Path):  # type: ignore[no-untyped-def]
    settings = load_settings(embedder="hashing")
    return build_memory(settings, embedder=HashingEmbedder(384), store=SQLiteStore(episodic_home / "i.db"))


def test_export_then_import_round_trip_keeps_cards_distillers_and_ranks(memory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bedrock = DistillerInfo(kind="bedrock", model="us.anthropic.claude-sonnet-4-6:0")
    llm = Card.model_validate({**GOOD, "outcome": "informational"})
    store_card(memory, "local", llm, session_id="a", distiller=bedrock, source_sha256="a" * 64)
    store_card(
        memory,
        "local",
        llm.model_copy(update={"problem": "Heuristic problem."}),
        session_id="b",
        distiller=DistillerInfo(kind="heuristic", model="v2"),
        source_sha256="b" * 64,
    )
    out = tmp_path / "cards"
    assert export_cards(memory, "local", out) == 2
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.json", META_FILE]
    assert set(json.loads((out / "a.json").read_text())) == set(Card.model_fields)  # the nine fields only

    other = build_memory(
        memory.settings, embedder=HashingEmbedder(384), store=SQLiteStore(tmp_path / "other.db")
    )
    # the agent's own card is better than any import: it is kept
    store_card(other, "local", llm, session_id="a", distiller=DistillerInfo(kind="self"))
    report = import_cards(other, "local", out, paths=[str(tmp_path / "no-transcripts")])
    assert report.files == 2 and report.imported == 1 and report.kept_better == 1 and report.invalid == []
    record = other.store.get("local", "b")
    assert record is not None and record.card.problem == "Heuristic problem."
    assert record.distiller.id == "heuristic:v2" and record.source_sha256 == "b" * 64
    assert other.store.get("local", "a").distiller.kind == "self"  # type: ignore[union-attr]
    again = import_cards(memory, "local", out, paths=[str(tmp_path / "no-transcripts")])
    assert again.imported == 2 and again.replaced == 2
    assert memory.store.get("local", "a").distiller.id == bedrock.id  # type: ignore[union-attr]


def test_import_refuses_an_invalid_file_and_downgrades_without_a_transcript(memory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "in"
    write(folder, "good", GOOD)
    write(folder, "bad", {**GOOD, "steps": ["Ran `cd /srv/app && make deploy --force 2>&1 | tail`"]})
    report = import_cards(memory, "local", folder, paths=[str(tmp_path / "none")])
    assert report.imported == 1 and [Path(f).stem for f, _ in report.invalid] == ["bad"]
    assert report.without_transcript == 1 and report.downgraded == 1
    record = memory.store.get("local", "good")
    assert record is not None and record.card.outcome is Outcome.UNVERIFIED
    assert record.distiller.kind == "import" and memory.store.get("local", "bad") is None


def test_write_refuses_a_session_id_that_is_not_a_file_name(tmp_path: Path, memory) -> None:  # type: ignore[no-untyped-def]
    from episodic.kernel.errors import InvalidArgumentError

    record = store_card(
        memory, "local", Card.model_validate(GOOD), session_id="ok", distiller=DistillerInfo(kind="heuristic")
    )
    with pytest.raises(InvalidArgumentError):
        write_card_folder([record.model_copy(update={"session_id": "../escape"})], tmp_path / "o")
