"""End to end through the CLI: `episodic eval` on small corpora with the hashing embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.cli.eval_cmds import expand_greedy
from episodic.judge.model import default_model_dir

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "eval"
DEMO = REPO / "shared" / "episodic" / "demo"
ALL_SYSTEMS = {"struct", "semantic", "reflect", "hybrid", "hybrid-verified", "raw-bm25", "raw-exchanges"}


@pytest.fixture()
def hashing_home(episodic_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    return episodic_home


def _eval(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(build_cli(), ["eval", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_eval_on_the_fixture_corpus(hashing_home: Path, tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    args = ["--transcripts", str(FIXTURES / "transcripts"), "--queries", str(FIXTURES / "queries.jsonl")]
    data = _eval(*args, "--json", "--report", str(report_dir))

    systems = data["systems"]
    assert isinstance(systems, dict) and set(systems) == ALL_SYSTEMS
    for name, entry in systems.items():
        assert {"recall@1", "recall@3", "mrr", "n", "se"} <= set(entry), name
        assert set(entry["se"]) == {"recall@1", "recall@3", "mrr"}
        assert entry["n"] == 11
        assert 0.0 <= entry["recall@1"] <= entry["recall@3"] <= 1.0
        assert set(entry["by_difficulty"]) == {"easy", "hard"}
    # keyword search finds easy queries (they reuse the transcript's words) in a five-session corpus
    assert systems["raw-bm25"]["by_difficulty"]["easy"]["recall@3"] >= 0.8
    assert systems["hybrid"]["notes"]["production_threshold"] == pytest.approx(0.1)

    queries = data["queries"]
    assert isinstance(queries, list) and len(queries) == 11
    assert all(set(q["ranks"]) == ALL_SYSTEMS for q in queries)
    missing = [q for q in queries if not q["in_corpus"]]
    assert [q["id"] for q in missing] == ["q11"] == data["missing_targets"]
    assert all(rank is None for rank in missing[0]["ranks"].values())  # a target not in the corpus is a miss
    corpus = data["corpus"]
    assert corpus["sessions"] == 5 and corpus["not_episodes"] == 1 and corpus["cards"] == 5

    report = (report_dir / "report.md").read_text()
    assert "| hybrid |" in report and "### hard queries" in report and "episodic eval --transcripts" in report
    assert (report_dir / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the second run reuses every parse from the content-hash cache
    again = _eval(*args, "--json", "--systems", "raw-bm25,struct")
    assert set(again["systems"]) == {"raw-bm25", "struct"}
    assert again["corpus"]["cache_misses"] == 0 and again["corpus"]["cache_hits"] == 6
    assert again["systems"]["raw-bm25"] == systems["raw-bm25"]


def test_eval_on_the_demo_corpus(hashing_home: Path, tmp_path: Path) -> None:
    queries = sorted(DEMO.glob("*queries*.jsonl"))
    if not queries:
        # no query file shipped with the demo: ask for each session by its first prompt (easy, but real)
        from episodic.assembly import build_source
        from episodic.kernel.settings import load_settings

        source = build_source(load_settings())
        lines = []
        for src in source.discover([str(DEMO)]):
            loaded = source.load(src)
            if getattr(loaded, "request", ""):
                lines.append(json.dumps({"query": loaded.request[:200], "session_id": loaded.session_id}))
        path = tmp_path / "demo-queries.jsonl"
        path.write_text("\n".join(lines) + "\n")
        queries = [path]
    data = _eval(
        "--transcripts", str(DEMO), "--queries", str(queries[0]), "--json", "--report", str(tmp_path / "r")
    )
    assert set(data["systems"]) == ALL_SYSTEMS
    assert data["corpus"]["sessions"] >= 5
    assert (tmp_path / "r" / "chart.png").is_file()


def test_text_output_and_usage_errors(hashing_home: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        build_cli(),
        [
            "eval",
            "--transcripts",
            str(FIXTURES / "transcripts"),
            "--queries",
            str(FIXTURES / "queries.jsonl"),
            "--systems",
            "raw-bm25",
            "--k",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| raw-bm25 |" in result.stdout and "recall@2" in result.stdout
    missing = runner.invoke(build_cli(), ["eval", "--queries", str(FIXTURES / "queries.jsonl")])
    assert missing.exit_code != 0 and "--transcripts" in missing.output
    unknown = runner.invoke(
        build_cli(),
        [
            "eval",
            "--transcripts",
            str(FIXTURES / "transcripts"),
            "--queries",
            str(FIXTURES / "queries.jsonl"),
            "--systems",
            "nope",
        ],
    )
    assert unknown.exit_code == 1 and "unknown system" in unknown.output


def test_bad_query_line_is_reported_with_its_number(hashing_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"query": "x", "session_id": "s"}\n{"query": "y"}\n')
    result = CliRunner().invoke(
        build_cli(), ["eval", "--transcripts", str(FIXTURES / "transcripts"), "--queries", str(bad)]
    )
    assert result.exit_code == 1
    assert "line 2: field 'session_id'" in result.output


def test_gen_queries_without_an_llm_exits_non_zero(hashing_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated.jsonl"
    result = CliRunner().invoke(
        build_cli(),
        ["eval", "gen-queries", "--transcripts", str(FIXTURES / "transcripts"), "--out", str(out)],
    )
    assert result.exit_code != 0
    assert "needs an LLM" in result.output and "EPISODIC_DISTILLER=bedrock" in result.output
    assert not out.exists()


def test_several_transcript_folders_after_one_flag() -> None:
    assert expand_greedy(["--transcripts", "a", "b", "--k", "3", "c"]) == [
        "--transcripts",
        "a",
        "--transcripts",
        "b",
        "--k",
        "3",
        "c",
    ]
    assert expand_greedy(["--json", "--transcripts", "a"]) == ["--json", "--transcripts", "a"]


def _cli(*args: str) -> str:
    result = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def test_eval_with_a_cards_folder_side_by_side_with_split(hashing_home: Path, tmp_path: Path) -> None:
    corpus = str(FIXTURES / "transcripts")
    _cli("index", corpus)
    folder = tmp_path / "cards"
    assert "exported 5 cards" in _cli("cards", "export", str(folder))
    cards = sorted(p for p in folder.glob("*.json") if p.name != "episodic-cards.json")
    cards[0].unlink()  # a session with no card file: distilled instead
    bad = json.loads(cards[1].read_text())
    bad["insight"] = "The culprit was /etc/nginx/sites-enabled/default all along."
    cards[1].write_text(json.dumps(bad))  # an invalid file: reported, its session distilled

    args = ["--transcripts", corpus, "--queries", str(FIXTURES / "queries.jsonl"), "--cards", str(folder)]
    data = _eval(*args, "--json", "--systems", "hybrid,struct,raw-bm25")
    assert set(data["systems"]) == {
        "hybrid@heuristic",
        "struct@heuristic",
        "hybrid@cards",
        "struct@cards",
        "raw-bm25",
    }
    assert data["systems"]["hybrid@cards"]["card_set"] == "cards"
    assert set(data["systems"]["hybrid@cards"]["by_fold"]) <= {"A", "B"}
    summary = data["corpus"]["card_sets"]["cards"]
    assert summary["from_folder"] == 3 and summary["distilled"] == 2
    assert len(summary["invalid"]) == 1 and "file path" in summary["invalid"][0]["reason"]
    assert all(q["fold"] in ("A", "B") for q in data["queries"])

    only = _eval(*args, "--cards-only", "--json", "--systems", "hybrid")
    assert set(only["systems"]) == {"hybrid"}
    imported = json.loads(_cli("cards", "import", str(folder), corpus, "--json"))
    assert imported["imported"] == 3 and len(imported["invalid"]) == 1


def test_cards_only_distils_just_the_sessions_the_folder_lacks(hashing_home: Path, tmp_path: Path) -> None:
    from episodic.distill.heuristic import HeuristicDistiller
    from episodic.embed.hashing import HashingEmbedder
    from episodic.evaluation.runner import run_evaluation
    from episodic.kernel.ports import Distiller
    from episodic.kernel.settings import load_settings

    class Counting(Distiller):
        def __init__(self) -> None:
            self.inner = HeuristicDistiller()
            self.info = self.inner.info
            self.seen: list[str] = []

        def distill(self, trajectory, survey):  # type: ignore[no-untyped-def]
            self.seen.append(trajectory.session_id)
            return self.inner.distill(trajectory, survey)

    corpus = str(FIXTURES / "transcripts")
    _cli("index", corpus)
    folder = tmp_path / "cards"
    _cli("cards", "export", str(folder))
    dropped = sorted(p for p in folder.glob("*.json") if p.name != "episodic-cards.json")[0]
    dropped.unlink()
    counting = Counting()
    result = run_evaluation(
        load_settings(),
        [corpus],
        FIXTURES / "queries.jsonl",
        ["struct"],
        embedder=HashingEmbedder(384),
        distiller=counting,
        cards_dir=folder,
        cards_only=True,
    )
    assert counting.seen == [dropped.stem]  # an LLM distiller is never paid for a card the folder has
    assert result.corpus["card_sets"]["cards"]["distilled"] == 1


def test_pseudo_queries_from_later_prompts_then_eval_reads_them(hashing_home: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "transcripts"
    shutil.copytree(FIXTURES / "transcripts", corpus)
    main = next((corpus / "-home-dev-billing").glob("*.jsonl"))
    lines = main.read_text().splitlines()
    later = json.loads(lines[0])  # a second prompt in the session, as a user asks it later on
    later["uuid"] = "b0b0b0b0-0000-5000-8000-000000000001"
    later["message"]["content"] = (
        "the invoice dates are still one day early when the runner sits in another timezone"
    )
    main.write_text("\n".join([*lines, json.dumps(later)]) + "\n")
    out = tmp_path / "pseudo.jsonl"
    result = CliRunner().invoke(
        build_cli(), ["eval", "pseudo-queries", "--transcripts", str(corpus), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 1 queries for 1 of" in result.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [{"query": later["message"]["content"], "session_id": main.stem, "id": "p0001"}]
    data = _eval("--transcripts", str(corpus), "--queries", str(out), "--systems", "hybrid", "--json")
    assert data["systems"]["hybrid"]["n"] == 1  # type: ignore[index]


def test_pseudo_queries_with_no_later_prompt_say_so(hashing_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "pseudo.jsonl"
    result = CliRunner().invoke(
        build_cli(),
        ["eval", "pseudo-queries", "--transcripts", str(FIXTURES / "transcripts"), "--out", str(out)],
    )
    assert result.exit_code == 1 and "no session has a later prompt" in result.output
    assert not out.exists()


@pytest.mark.skipif(
    not default_model_dir().is_dir(), reason="the judge's model is not installed (scripts/install)"
)
def test_eval_with_the_judge_reports_its_cost(
    hashing_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = str(FIXTURES / "transcripts")
    _cli("index", corpus)
    folder = tmp_path / "cards"
    _cli("cards", "export", str(folder))  # read back as a folder of cards: a kind the judge reads
    monkeypatch.setenv("EPISODIC_RERANKER", "local")
    args = ["--transcripts", corpus, "--queries", str(FIXTURES / "queries.jsonl"), "--cards", str(folder)]
    data = _eval(*args, "--cards-only", "--systems", "hybrid", "--json", "--report", str(tmp_path / "r"))
    cost = data["second_stage"]["cards"]  # type: ignore[index]
    assert cost["name"] == "local" and cost["depth"] == 3 and cost["judged"] > 0
    assert cost["p95_ms"] >= cost["p50_ms"] > 0
    assert "## The second stage's cost" in (tmp_path / "r" / "report.md").read_text()
