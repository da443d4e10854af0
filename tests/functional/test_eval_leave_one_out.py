"""`episodic eval --negatives`: the leave-one-out view asks every positive again without its target and cousins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "eval"


def test_leave_one_out_changes_the_answer_when_the_target_is_removed(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_RERANKER", "none")
    queries = [json.loads(line) for line in (FIXTURES / "queries.jsonl").read_text().splitlines() if line]
    # q02's target and a cousin named for q01 (the session q02's answer shows second)
    queries[0]["cousins"] = ["5a99d17c-107c-5d85-8450-7c753536b445"]
    query_file = tmp_path / "queries.jsonl"
    query_file.write_text("".join(json.dumps(q) + "\n" for q in queries))
    negatives = tmp_path / "negatives.jsonl"
    negatives.write_text(
        json.dumps({"id": "n1", "query": "kubernetes ingress drops websocket upgrades"}) + "\n"
    )
    report = tmp_path / "report"
    args = ["eval", "--transcripts", str(FIXTURES / "transcripts"), "--queries", str(query_file)]
    args += ["--negatives", str(negatives), "--systems", "hybrid", "--json", "--report", str(report)]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)["injection"]["heuristic"]

    prompts = {p["id"]: p for p in view["prompts"]}
    target = queries[0]["session_id"]
    assert target in prompts["q01"]["cards"]  # with its target stored, q01 gets it as a full card
    left_out = prompts["q01~loo"]
    assert left_out["left_out"] is True
    shown = left_out["cards"] + left_out["pointers"] + left_out["search_traces"]
    assert target not in shown and queries[0]["cousins"][0] not in shown  # neither target nor cousin
    assert left_out["cards"] != prompts["q01"]["cards"]
    # every present positive is asked once more, and read as a negative
    present = [q for q in queries if q["session_id"] in {p.get("target") for p in view["prompts"]}]
    assert view["loo"]["negatives"] == len(present) and view["loo"]["positives"] == 0
    assert view["mcp_loo"]["negatives"] == len(present)
    assert set(view["loo_by_fold"]) == set(view["by_fold"])
    share = view["loo"]["negatives_with_card"]
    assert view["loo"]["negatives_with_card_se"] == pytest.approx(
        (share * (1 - share) / len(present)) ** 0.5, abs=1e-4
    )
    assert "leave-one-out with a card" in (report / "report.md").read_text()


def test_cousins_must_be_a_list_of_session_ids(episodic_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "queries.jsonl"
    bad.write_text(json.dumps({"query": "x y z", "session_id": "s1", "cousins": "s2"}) + "\n")
    args = ["eval", "--transcripts", str(FIXTURES / "transcripts"), "--queries", str(bad), "--json"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code != 0
    assert "cousins" in result.output + result.stderr
