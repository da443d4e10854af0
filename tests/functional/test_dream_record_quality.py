"""The dream records of the one-team corpus read as a person would: six weeks of
../shared/transcripts/entireio__cli dreamt offline twice, from the heuristic's cards and from the reference
LLM cards of ../shared/eval/cards (`episodic cards import`), and every record checked.

The checks are written here independently of `episodic.dream.statements` (they must not agree with the
code by construction): no item is a prompt as typed or a change-log line, no hole where a path or a name
was stripped (the patterns below and the card check `distill.holes`), no two decisions of a week say the same thing (MiniLM cosine >= SAME_DECISION), every item
cites sessions of its week, and in a week of more than five sessions an empty section says why. The
input (index, history, scratch databases) is byte-identical after dreaming."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from conftest import TRANSCRIPTS_DIR
from episodic.dream.record import SECTIONS, ParsedRecord, parse_record
from kits import warm_cli

pytestmark = pytest.mark.transcripts
WEEKS = ["2026-W02", "2026-W03", "2026-W04", "2026-W05", "2026-W06", "2026-W07"]
CARDS = TRANSCRIPTS_DIR.parent / "eval" / "cards"  # beside the transcripts, wherever they are
SAME_DECISION = 0.80  # MiniLM cosine at which two statements say the same thing (paraphrases 0.63-0.68)
ITEM_SECTIONS = ("themes", "decisions", "unfinished", "insights", "risks", "flags")
INPUTS = ("index.sqlite3", "history.sqlite3", "scratch.sqlite3")
HOLES = (
    r"(?i)\b(?:in|at|to|from|of|on|into)\s+(?:is|are|was|were)\b",  # "the lint error in is"
    r"(?i)\((?:line|file)?\s*\)",  # "(line )"
    r"(?i)\b(?:the|a|an)\s+(?:is|are|was|were)\b",
    r"(?i)\b(?:in|at|to|from|of|the)\s+[,.;:](?!\w)",
    r"\S {2,}\S",
)
CHANGE_LOG = re.compile(
    r"(?i)^(?:\d{4}-\d{2}-\d{2}: )?(?:\(unverified\) )?(?:updated|added|replaced|removed|renamed|changed|created"
    r"|modified|committed|pushed|edited)\b(?!.*\b(?:because|so that|rather than|instead of|to avoid)\b)"
)
# a title names the work (issue 39: "When:" was one): these make it a word, a label or a fragment
TITLE_WORDS = 3
NOT_A_TITLE = (
    r"[:;,(—–-]\s*$",  # left open: "When:"
    r"(?:…|\.\.\.)\s*$",  # cut
    r"^[a-z]",  # begins mid-sentence
    r"(?i)^(?:when|where|what|why|context|problem|summary|steps|expected|actual)\s*:",  # a template label
)
# an insight or a decision is a complete statement: not cut, not two lines run together
NOT_A_STATEMENT = (
    r"(?:…|\.\.\.|[:,;(—–-])\s*$",
    r"[a-z0-9_)] (?:The|This|A|An|Only|Both|It|We)\s",  # "…returns local values Only name local…"
    r"(?i)\b(?:at|in|of|from)\s+now\s+\w+s\b",  # "The change at now calls…"
    r"\bfrom to\b|\buse instead\b",  # "changed from to X", "now use instead": a name was removed
    r"[a-z0-9)] (?:Creates|Verifies|Avoids|Used|Called|Replaced|Returns)\b",  # two list items run together
    r"^(?:Instead of|Rather than)(?: \S+){1,3}$",  # "Instead of lines 235-236"
)
# counts belong to the statistics appendix, not to the narrative
NARRATIVE_STATISTICS = (
    r"\bsessions? across\b",
    r"(?i)\boutcomes?:",
    r"\bcandidates?\b",
    r"\bgates?\b",
    r"\bset aside\b",
    r"\bproject\(s\)",
)
_CITE = re.compile(r"\[([A-Za-z0-9_.-]{1,8}) (\d{4}-\d{2}-\d{2})\]")


def run(args: list[str], home: Path, embedder: str = "hashing") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    env["EPISODIC_EMBEDDER"] = embedder
    env.pop("CLAUDE_CONFIG_DIR", None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=1800
    )


def fingerprint(home: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for name in INPUTS
        for p in sorted(home.glob(name + "*"))
        if not p.name.endswith("-shm")
    }


def dream_corpus(home: Path, corpus: Path) -> dict[str, object]:
    before = fingerprint(home)
    args = ["dream", "--offline", "--keep-survey", "--since", "2026-01-05", "--until", "2026-02-15"]
    done = run([*args, "--transcripts", str(corpus), "--json"], home, embedder="minilm")
    assert done.returncode == 0, done.stderr
    folder = home / "dreams" / "local"
    records = {w: parse_record((folder / f"{w}.md").read_text(encoding="utf-8")) for w in WEEKS}
    surveys = {w: (folder / f"{w}.survey.md").read_text(encoding="utf-8") for w in WEEKS}
    return {
        "home": home,
        "before": before,
        "after": fingerprint(home),
        "records": records,
        "surveys": surveys,
    }


@pytest.fixture(scope="module")
def indexed(transcripts_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus indexed once with the heuristic's cards; each dream runs in a copy (never in this home)."""
    home = tmp_path_factory.mktemp("indexed") / "episodic-home"
    (home.parent / "user-home").mkdir()
    done = run(["index", str(transcripts_dir / "entireio__cli"), "--distiller", "heuristic", "--json"], home)
    assert done.returncode == 0, done.stderr
    return home


@pytest.fixture(scope="module", params=["heuristic", "llm-cards"])
def built(
    request: pytest.FixtureRequest,
    indexed: Path,
    transcripts_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
):  # type: ignore[no-untyped-def]
    if request.param == "llm-cards" and not CARDS.is_dir():
        pytest.skip("../shared/eval/cards is absent")
    home = tmp_path_factory.mktemp(request.param) / "episodic-home"
    shutil.copytree(indexed, home)  # the same bytes as indexing the corpus here
    (home.parent / "user-home").mkdir()
    corpus = transcripts_dir / "entireio__cli"
    if request.param == "llm-cards":
        imported = run(["cards", "import", str(CARDS), str(corpus), "--json"], home)
        assert imported.returncode == 0, imported.stderr
    return {"kind": request.param, **dream_corpus(home, corpus)}


def items(record: ParsedRecord, key: str) -> list[str]:
    return [re.sub(r"^(?:- |\d+\. )", "", line) for line in record.sections.get(key, [])]


def claim(line: str) -> str:
    """An item without its citations, score and bold markers (what it says)."""
    text = _CITE.sub("", line)
    text = re.sub(r"\s*\(score [0-9.]+\)", "", text).replace("**", "")
    return " ".join(text.split())


def typed_prompts(survey: str) -> set[str]:
    """The week's prompts as the survey keeps them (verbatim, scrubbed), whole and sentence by sentence."""
    out: set[str] = set()
    for prompt in re.findall(r"^  \d+\. (.+)$", survey, re.M):
        for piece in [prompt, *re.split(r"(?<=[.!?])\s+", prompt)]:
            norm = " ".join(re.sub(r"[^\w\s]", " ", piece.rstrip("…").lower()).split())
            if len(norm) >= 12:
                out.add(norm)
    return out


def test_no_item_is_a_prompt_as_typed_or_a_change_log_line(built) -> None:  # type: ignore[no-untyped-def]
    for week, record in built["records"].items():
        prompts = typed_prompts(built["surveys"][week])
        for key in ITEM_SECTIONS:
            for line in items(record, key):
                said = claim(line)
                for part in [said, *said.split(": ", 1)[:1]]:  # a theme's or thread's title on its own too
                    norm = " ".join(re.sub(r"[^\w\s]", " ", part.rstrip("…").lower()).split())
                    assert norm not in prompts, (built["kind"], week, key, line)
                assert not CHANGE_LOG.match(said), (built["kind"], week, key, line)


def test_no_hole_where_a_path_or_a_name_was_stripped(built) -> None:  # type: ignore[no-untyped-def]
    from episodic.distill.holes import hole_breaks  # the card check, applied to the record's items

    for week, record in built["records"].items():
        for key in ITEM_SECTIONS:
            for line in items(record, key):
                for hole in HOLES:
                    assert not re.search(hole, claim(line)), (built["kind"], week, key, hole, line)
                assert hole_breaks(claim(line)) == (), (built["kind"], week, key, line)


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    """One MiniLM model for the module (loading it costs more than the decisions it embeds)."""
    from episodic.embed.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    yield embedder
    embedder.close()


def test_no_two_decisions_of_a_week_say_the_same_thing(built, minilm) -> None:  # type: ignore[no-untyped-def]
    counted = 0
    for week, record in built["records"].items():
        said = [re.sub(r"^\d{4}-\d{2}-\d{2}: ", "", claim(line)) for line in items(record, "decisions")]
        said = [s for s in said if not s.startswith("None this week")]
        if len(said) < 2:
            continue
        vectors = minilm.embed(said)
        similarity = vectors @ vectors.T
        for i in range(len(said)):
            for j in range(i + 1, len(said)):
                assert similarity[i, j] < SAME_DECISION, (built["kind"], week, said[i], said[j])
        counted += len(said)
    assert counted >= 5  # the corpus' weeks do record decisions


def test_every_item_cites_sessions_of_its_week(built) -> None:  # type: ignore[no-untyped-def]
    for week, record in built["records"].items():
        monday = date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
        cited = record.cited_sessions()
        for key in (*ITEM_SECTIONS, "narrative", "projects"):
            for line in items(record, key):
                if line.startswith("None this week"):
                    continue
                cites = _CITE.findall(line)
                assert cites, (built["kind"], week, key, line)
                for short, day in cites:
                    assert short in cited and 0 <= (date.fromisoformat(day) - monday).days < 7, (week, line)


def test_a_busy_week_never_has_an_empty_section_without_a_reason(built) -> None:  # type: ignore[no-untyped-def]
    busy = 0
    for week, record in built["records"].items():
        if int(record.front["sessions_analysed"]) <= 5:
            continue
        busy += 1
        for key, _ in SECTIONS:
            lines = items(record, key)
            assert lines, (built["kind"], week, key)
            if lines[0].startswith("None this week"):
                reason = lines[0].removeprefix("None this week").strip(" :.")
                assert len(reason.split()) >= 6, (built["kind"], week, key, lines[0])
    assert busy >= 4


def test_projects_are_named_as_their_users_know_them(built) -> None:  # type: ignore[no-untyped-def]
    for week, record in built["records"].items():
        for line in items(record, "projects"):
            name = line.split(":", 1)[0]
            assert not name.isdigit() and len(name) > 2, (week, line)


def test_the_input_is_byte_identical_after_dreaming(built) -> None:  # type: ignore[no-untyped-def]
    assert set(built["before"]) >= {"index.sqlite3", "history.sqlite3", "scratch.sqlite3"}
    assert built["after"] == built["before"]


def test_patterns_across_weeks_join_threads_by_meaning(built) -> None:  # type: ignore[no-untyped-def]
    folder = built["home"] / "dreams" / "local"
    first = (folder / "2026-W02.synthesis.md").read_text(encoding="utf-8")
    assert "First record: no earlier week" in first
    for week in WEEKS[1:]:
        synthesis = (folder / f"{week}.synthesis.md").read_text(encoding="utf-8")
        assert "First record" not in synthesis, week
        assert "terms " not in synthesis and ": terms" not in synthesis
        for line in synthesis.split("## Decisions")[0].splitlines():
            if " recurs from " in line or " carries over from " in line:
                assert re.search(r"similarity 0\.\d\d\)", line), line
    print(json.dumps({w: r.front["sessions_analysed"] for w, r in built["records"].items()}))


def titles(record: ParsedRecord) -> list[str]:
    """Every thread title the record shows: a theme's bold title, an unfinished thread's, a flag's."""
    bold = [re.match(r"\*\*(.+?)\*\*", x) for x in items(record, "themes")]
    out = [m[1] for m in bold if m]
    out += [
        claim(x).split(": its last session", 1)[0] for x in items(record, "unfinished") if ": its last" in x
    ]
    out += [claim(x).split(" gate: ", 1)[1] for x in items(record, "flags") if " gate: " in x]
    return [t for t in out if t]


def test_no_title_is_a_single_word_or_a_fragment(built) -> None:  # type: ignore[no-untyped-def]
    from episodic.distill.holes import hole_breaks

    seen = 0
    for week, record in built["records"].items():
        for title in titles(record):
            seen += 1
            assert len(title.split()) >= TITLE_WORDS, (built["kind"], week, title)
            for rule in (*NOT_A_TITLE, *HOLES):
                assert not re.search(rule, title), (built["kind"], week, rule, title)
            assert hole_breaks(title) == (), (built["kind"], week, title)
    assert seen >= 10


def test_insights_and_decisions_are_complete_statements(built) -> None:  # type: ignore[no-untyped-def]
    for week, record in built["records"].items():
        for key in ("insights", "decisions"):
            for line in items(record, key):
                said = re.sub(
                    r"^(?:\d{4}-\d{2}-\d{2}: )?(?:\(unverified\) )?(?:Misleading: )?", "", claim(line)
                )
                if said.startswith("None this week"):
                    continue
                assert len(said.split()) >= 4, (built["kind"], week, key, line)
                for rule in NOT_A_STATEMENT:
                    assert not re.search(rule, said), (built["kind"], week, key, rule, line)


def test_the_narrative_says_in_sentences_what_the_week_was_about(built) -> None:  # type: ignore[no-untyped-def]
    """The narrative names the week's threads, a decision when one was made and what is left open; its
    counts are in the appendix instead."""
    busy = 0
    for week, record in built["records"].items():
        narrative = claim(" ".join(items(record, "narrative")))
        for rule in NARRATIVE_STATISTICS:
            assert not re.search(rule, narrative), (built["kind"], week, rule, narrative)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z“])", narrative) if s]
        assert all(s.endswith((".", "!", "?")) for s in sentences), (built["kind"], week, narrative)
        if int(record.front["sessions_analysed"]) <= 5:
            continue
        busy += 1
        assert len(sentences) >= 2, (built["kind"], week, narrative)
        shown = titles(record)
        assert any(t in narrative for t in shown), (built["kind"], week, shown, narrative)
        left = [
            claim(x).split(": its last session", 1)[0]
            for x in items(record, "unfinished")
            if ": its last" in x
        ]
        for title in left[:3]:
            assert title in narrative, (built["kind"], week, title, narrative)
        decided = [re.sub(r"^\d{4}-\d{2}-\d{2}: ", "", claim(x)) for x in items(record, "decisions")]
        decided = [d for d in decided if not d.startswith("None this week")]
        if decided:
            assert any(d[:40] in narrative for d in decided), (built["kind"], week, narrative)
        appendix = " ".join(record.sections.get("statistics", []))
        assert re.search(r"\d+ sessions across \d+ project", appendix), (built["kind"], week, appendix)
    assert busy >= 4
