"""`episodic eval replay` through the CLI on a synthetic corpus with known times (the hashing embedder)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli

REPO = Path(__file__).resolve().parents[2]
BILLING = (
    REPO / "tests/fixtures/eval/transcripts/-home-dev-billing/2d4f5d32-e1f1-52a7-bc28-7babc0ab7939.jsonl"
)
# minutes after the fixture's own start: session 2 starts before session 1 ends, session 4 before session 3 ends
OFFSETS = {"s1": 0, "s2": 5, "s3": 60, "s4": 65, "s5": 24 * 60}
EXTRA_PROMPTS = (  # the hook skips both: a slash command with arguments, a short prompt
    "<command-name>/review</command-name><command-args>the invoice code please</command-args>",
    "ok go",
)


def _session(folder: Path, name: str, minutes: int) -> tuple[str, datetime, datetime]:
    """The billing fixture under a new session id, shifted by `minutes`; (id, start, end)."""
    session_id = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    lines = [json.loads(line) for line in BILLING.read_text().splitlines()]
    last = lines[-1]
    for offset, text in enumerate(EXTRA_PROMPTS, start=1):
        extra = dict(
            last, uuid=str(uuid.uuid4()), parentUuid=last["uuid"], message={"role": "user", "content": text}
        )
        extra["timestamp"] = (
            datetime.fromisoformat(last["timestamp"]) + timedelta(seconds=offset)
        ).isoformat()
        lines.append(extra)
    times = []
    for line in lines:
        line["sessionId"] = session_id
        moved = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")) + timedelta(minutes=minutes)
        line["timestamp"] = moved.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        times.append(moved)
    project = folder / f"-home-dev-billing-{name}"
    project.mkdir(parents=True)
    (project / f"{session_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return session_id, min(times), max(times)


@pytest.fixture()
def timed_corpus(episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple]:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_RERANKER", "none")
    return {name: _session(tmp_path / "transcripts", name, minutes) for name, minutes in OFFSETS.items()}


def test_replay_never_lets_a_session_see_itself_or_a_later_one(timed_corpus: dict, tmp_path: Path) -> None:
    report = tmp_path / "report"
    args = [
        "eval",
        "replay",
        "--transcripts",
        str(tmp_path / "transcripts"),
        "--json",
        "--report",
        str(report),
    ]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    data = json.loads(result.stdout)

    ids = {name: sid for name, (sid, _, _) in timed_corpus.items()}
    start = {sid: s for sid, s, _ in timed_corpus.values()}
    end = {sid: e for sid, _, e in timed_corpus.values()}
    # each session's two real prompts are answered; the slash command and the short prompt are skipped
    assert data["prompts_answered"] == 10 and data["prompts"] == 20
    assert data["skipped"] == {"slash command": 5, "short prompt": 5}
    rows = data["records"]["heuristic/first stage"]
    assert [r["index"] for r in rows if r["session_id"] == ids["s1"]] == [0, 1]
    seen = {r["session_id"]: r["memory_size"] for r in rows}
    # s2 starts before s1 ended; s4 before s3 ended: only sessions that ended before a start are candidates
    assert seen == {ids["s1"]: 0, ids["s2"]: 0, ids["s3"]: 2, ids["s4"]: 2, ids["s5"]: 4}
    for row in rows:
        for given, _tier, _score, _similarity in row["given"]:
            assert given != row["session_id"]
            assert end[given] < start[row["session_id"]]
    # the same problem, told again: the later sessions are given the earlier ones (the test can fail)
    given_to = {r["session_id"]: {g[0] for g in r["given"]} for r in rows if r["given"]}
    assert given_to[ids["s5"]] and given_to[ids["s5"]] <= {ids["s1"], ids["s2"], ids["s3"], ids["s4"]}
    assert given_to.get(ids["s3"], set()) <= {ids["s1"], ids["s2"]} and ids["s1"] not in given_to

    runs = {(r["card_set"], r["stage"]): r for r in data["runs"]}
    assert set(runs) == {("heuristic", "first stage"), ("heuristic", "shipped")}
    overall = runs[("heuristic", "first stage")]["overall"]
    assert overall["prompts"] == 10 and overall["sessions"] == 5
    given = sum(len(r["given"]) for r in rows)
    assert overall["cards_per_prompt"] + overall["pointers_per_prompt"] == pytest.approx(given / 10)

    text = (report / "report.md").read_text()
    assert "The replay of real prompts" in text and "episodic eval replay --transcripts" in text
    assert "| **heuristic, first stage** (none) |" in text
    assert (report / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_limit_spreads_the_sessions_and_keeps_the_memory(timed_corpus: dict, tmp_path: Path) -> None:
    args = ["eval", "replay", "--transcripts", str(tmp_path / "transcripts"), "--json", "--limit", "2"]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    data = json.loads(result.stdout)
    rows = data["records"]["heuristic/shipped"]
    assert data["sessions_replayed"] == 2 and len({r["session_id"] for r in rows}) == 2
    # the first and the third in time order (0 and 5 // 2): the third still meets the two that ended before it
    assert {r["memory_size"] for r in rows} == {0, 2}


def test_replay_refuses_a_missing_cards_folder(timed_corpus: dict, tmp_path: Path) -> None:
    args = [
        "eval",
        "replay",
        "--transcripts",
        str(tmp_path / "transcripts"),
        "--cards",
        str(tmp_path / "nope"),
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 2 and "nope" in result.output + result.stderr


FIXTURES = REPO / "tests" / "fixtures" / "eval"


def test_yardsticks_put_every_yardstick_in_one_table(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_RERANKER", "none")
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "dev-queries.jsonl").write_text((FIXTURES / "queries.jsonl").read_text())
    negatives = ["the kubernetes ingress drops websocket upgrades after sixty seconds", "rotate the gpg key"]
    (eval_dir / "dev-negatives.jsonl").write_text("".join(json.dumps({"query": q}) + "\n" for q in negatives))
    report = tmp_path / "report"
    args = ["eval", "yardsticks", "--transcripts", str(FIXTURES / "transcripts"), "--eval-dir", str(eval_dir)]
    result = CliRunner().invoke(
        build_cli(), [*args, "--report", str(report), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output + result.stderr
    data = json.loads(result.stdout)

    columns = ["heuristic, first stage", "heuristic, shipped"]
    assert data["columns"] == columns
    rows = {(r["yardstick"], r["measure"]): r for r in data["rows"]}
    for measure in (
        "recall@1",
        "targets given as a full card (hook)",
        "hand negatives given a full card",
        "leave-one-out negatives given a full card",
    ):
        cells = rows[("dev", measure)]["cells"]
        assert set(cells) == set(columns), measure
        assert set(cells["heuristic, shipped"]["folds"]) == {"A", "B"}
    recall = rows[("dev", "recall@1")]["cells"]["heuristic, first stage"]
    assert recall["n"] == 11 and 0 < recall["se"] < 0.5
    assert rows[("dev", "hand negatives given a full card")]["cells"]["heuristic, shipped"]["n"] == 2
    replayed = rows[("replay", "full cards per real prompt")]["cells"]["heuristic, first stage"]
    assert replayed["n"] == data["replay"]["prompts_answered"] > 0
    assert any("fresh" in note for note in data["notes"])  # no fresh set in the folder: said, not hidden

    text = (report / "report.md").read_text()
    assert "| yardstick | measure | n | heuristic, first stage | heuristic, shipped |" in text
    assert "| dev | leave-one-out negatives given a full card ↓ |" in text
    assert "The replay of real prompts" in text and "episodic eval yardsticks --transcripts" in text
    assert (report / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _replayed(tmp_path: Path) -> dict:
    args = ["eval", "replay", "--transcripts", str(tmp_path / "transcripts"), "--json"]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def _tell_again(folder: Path, session_id: str) -> None:
    """Append the session's first real prompt again, a second after its last line."""
    path = next(folder.glob(f"*/{session_id}.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(x for x in lines if x.get("type") == "user" and isinstance(x["message"].get("content"), str))
    last = lines[-1]
    at = datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00")) + timedelta(seconds=1)
    again = dict(first, uuid=str(uuid.uuid4()), parentUuid=last["uuid"])
    again["timestamp"] = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    path.write_text(path.read_text() + json.dumps(again) + "\n")


def _repeats(rows: list[dict]) -> list[tuple[str, str]]:
    pairs = [(r["session_id"], g[0]) for r in rows for g in r["given"]]
    return [pair for pair in set(pairs) if pairs.count(pair) > 1]


def test_replay_gives_through_the_server_never_the_same_card_twice(
    timed_corpus: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("s3", "s5"):  # a user who tells the same problem twice in one session
        _tell_again(tmp_path / "transcripts", timed_corpus[name][0])
    # the server's rule switched off: the same problem told twice in a session meets the same card twice
    monkeypatch.setenv("EPISODIC_INJECTIONS_NEVER_TWICE", "false")
    loose = _replayed(tmp_path)
    assert _repeats(loose["records"]["heuristic/first stage"])

    monkeypatch.setenv("EPISODIC_INJECTIONS_NEVER_TWICE", "true")
    data = _replayed(tmp_path)
    for run in data["runs"]:
        assert run["overall"]["repeats"] == 0 and run["overall"]["card_repeats"] == 0, run["stage"]
    for stage in ("first stage", "shipped"):
        rows = data["records"][f"heuristic/{stage}"]
        assert not _repeats(rows), stage
        # each stage keeps its own record: what one stage gave never holds back the other's answer
        assert any(r["given"] for r in rows), stage
    first = {(r["session_id"], r["index"]): r["given"] for r in data["records"]["heuristic/first stage"]}
    shipped = {(r["session_id"], r["index"]): r["given"] for r in data["records"]["heuristic/shipped"]}
    assert first == shipped  # no second stage configured: the same decision, recorded apart
