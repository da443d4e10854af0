"""`episodic dream` on the one-team corpus (six weeks of ../shared/transcripts/entireio__cli): one offline
record per week, every section present, every promoted theme through all three gates with its score,
every cited session real, the input index byte-identical; then the dashboard in headless Chromium."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodic.dream.record import SECTIONS, parse_record, section_items
from episodic.store.sqlite import SQLiteStore
from kits import warm_cli
from kits.browser_kit import is_blank, page_screenshot

pytestmark = pytest.mark.transcripts
WEEKS = ["2026-W02", "2026-W03", "2026-W04", "2026-W05", "2026-W06", "2026-W07"]


def run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "EPISODIC_HOME": str(home),
        "HOME": str(home.parent / "user-home"),
        "EPISODIC_EMBEDDER": "hashing",
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=900
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def dreamt(transcripts_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    home = tmp_path_factory.mktemp("dream") / "episodic-home"
    (home.parent / "user-home").mkdir()
    corpus = transcripts_dir / "entireio__cli"
    indexed = run(["index", str(corpus), "--json"], home)
    assert indexed.returncode == 0, indexed.stderr
    index = home / "index.sqlite3"
    before = sha256(index)
    args = ["dream", "--since", "2026-01-05", "--until", "2026-02-15", "--transcripts", str(corpus), "--json"]
    done = run(args, home)
    assert done.returncode == 0, done.stderr
    return {
        "home": home,
        "index": index,
        "before": before,
        "weeks": json.loads(done.stdout),
        "corpus": corpus,
    }


def test_one_offline_record_per_week_with_every_section(dreamt: dict) -> None:  # type: ignore[type-arg]
    assert [w["week"] for w in dreamt["weeks"]] == WEEKS
    folder = dreamt["home"] / "dreams" / "local"
    for week in WEEKS:
        parsed = parse_record((folder / f"{week}.md").read_text(encoding="utf-8"))
        assert parsed.front["week"] == week and parsed.front["type"] == "dreaming-cycle"
        assert parsed.front["mode"] == "offline" and int(parsed.front["sessions_analysed"]) > 0
        for key, _ in SECTIONS:
            assert key in parsed.sections, (week, key)
        assert "claims_without_citation: 0" in parsed.text
        assert (folder / f"{week}.synthesis.md").is_file()
    total = sum(w["phases"]["survey"]["sessions"] for w in dreamt["weeks"])
    assert total >= 140  # the corpus' indexed sessions, each in exactly one week


def test_every_promoted_theme_passed_all_three_gates_with_its_score(dreamt: dict) -> None:  # type: ignore[type-arg]
    promoted = 0
    for result in dreamt["weeks"]:
        record = parse_record(Path(result["written"][0]).read_text(encoding="utf-8"))
        themes = section_items(record, "themes")
        blocks = [b for b in result["explain"].split("\nthread ") if "PROMOTED" in b.split("\n", 1)[0]]
        assert len(themes) == len(blocks) == result["phases"]["score"]["promoted"]
        for block in blocks:
            gates = [line for line in block.splitlines() if line.lstrip().startswith("gate ")]
            assert len(gates) == 3 and all(" pass " in line for line in gates) and "FAIL" not in block
            assert float(block.split("score ", 1)[1].split(" ", 1)[0]) >= 0.7
        for theme in themes:
            assert float(theme.split("(score ", 1)[1][:4]) >= 0.7
        promoted += len(themes)
    assert promoted >= 3


def test_every_cited_session_is_a_real_session_of_the_index_and_of_its_week(dreamt: dict) -> None:  # type: ignore[type-arg]
    store = SQLiteStore(dreamt["index"])
    try:
        for result in dreamt["weeks"]:
            record = parse_record(Path(result["written"][0]).read_text(encoding="utf-8"))
            cited = record.cited_sessions()
            assert cited
            for short, day in record.citations():
                card = store.get("local", cited[short])
                assert card is not None and card.started_at is not None
                assert card.started_at.date().isoformat() == day
                assert card.started_at.isocalendar()[:2] == tuple(map(int, result["week"].split("-W")))
    finally:
        store.close()
    assert sha256(dreamt["index"]) == dreamt["before"]


def test_the_survey_compresses_the_week_and_the_record_stays_small(dreamt: dict) -> None:  # type: ignore[type-arg]
    for result in dreamt["weeks"]:
        survey = result["phases"]["survey"]
        assert survey["transcripts_found"] == survey["sessions"]
        assert survey["survey_bytes"] * 50 < survey["raw_bytes"]
        assert result["record_bytes"] < 20_000
        assert result["phases"]["extract"]["deep_extractions"] <= 8


def test_the_input_index_is_byte_identical_after_dreaming_again_with_force(dreamt: dict) -> None:  # type: ignore[type-arg]
    again = run(
        ["dream", "--week", "2026-W06", "--force", "--transcripts", str(dreamt["corpus"]), "--explain"],
        dreamt["home"],
    )
    assert again.returncode == 0, again.stderr
    assert "2026-W06: replaced" in again.stdout and "gate not_recorded" in again.stdout
    kept = run(
        ["dream", "--week", "2026-W06", "--keep-survey", "--offline", "--transcripts", str(dreamt["corpus"])],
        dreamt["home"],
    )
    assert "kept its record" in kept.stdout and "2026-W06.survey.md" in kept.stdout
    assert (dreamt["home"] / "dreams" / "local" / "2026-W06.survey.md").is_file()
    surveyed = run(
        [
            "dream",
            "--week",
            "2026-W03",
            "--force",
            "--keep-survey",
            "--offline",
            "--transcripts",
            str(dreamt["corpus"]),
        ],
        dreamt["home"],
    )
    assert surveyed.returncode == 0, surveyed.stderr
    survey = (dreamt["home"] / "dreams" / "local" / "2026-W03.survey.md").read_text(encoding="utf-8")
    assert survey.startswith("# Survey 2026-W03") and "- prompts (" in survey and "card only" not in survey
    default = run(["dream", "--offline"], dreamt["home"])  # from the last record to the last complete week
    assert default.returncode == 0, default.stderr
    quiet = [line for line in default.stdout.splitlines() if "no sessions" in line]
    assert (
        len(quiet) == 1
        and quiet[0].startswith("2026-W08 to ")
        and quiet[0].endswith("no sessions, no record")
    )
    assert not (dreamt["home"] / "dreams" / "local" / "2026-W08.md").exists()  # an empty week gets no record
    assert sha256(dreamt["index"]) == dreamt["before"]


def test_the_dashboard_renders_in_headless_chromium(dreamt: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    page = tmp_path / "dashboard.html"
    made = run(["dream", "--html", "--out", str(page)], dreamt["home"])
    assert made.returncode == 0 and "dashboard of 6 record(s)" in made.stdout, made.stderr
    shot = tmp_path / "dashboard.png"
    seen = page_screenshot(page, shot)
    assert shot.stat().st_size > 10_000 and not is_blank(shot)
    assert seen["title"] == "Dreams 2026-W02 to 2026-W07" and seen["blocked_requests"] == []
    text = str(seen["text"])
    for heading in (
        "Themes across weeks",
        "Decisions timeline",
        "Unfinished threads",
        "Flags for review",
        *WEEKS,
    ):
        assert heading in text


def test_the_week_is_read_from_the_history_records_not_reparsed(
    dreamt: dict,  # type: ignore[type-arg]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import UTC, datetime

    from episodic.assembly.dream import dream_adapters
    from episodic.dream.history_source import HistoryWeekSource
    from episodic.kernel.settings import load_settings

    monkeypatch.setenv("EPISODIC_HOME", str(dreamt["home"]))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    history_file = dreamt["home"] / "history.sqlite3"
    before = sha256(history_file)
    source = dream_adapters(load_settings(), transcripts=[str(dreamt["corpus"])]).source
    assert isinstance(source, HistoryWeekSource)
    week = source.sessions("local", datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 12, tzinfo=UTC))
    assert week and source.from_history == len(week)  # every digest from its record, no transcript parsed
    assert all(d.transcript_found and d.prompts for d in week)
    assert sha256(history_file) == before  # dreaming reads history, never writes it


def test_the_viewer_shows_a_real_record_as_html_at_a_phones_width(
    dreamt: dict,  # type: ignore[type-arg]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A week of the corpus in the viewer at 420 px: rendered markdown (no raw marks), the front matter as a
    table, nothing wider than the window, and every citation a link to an episode the index holds."""
    from episodic.assembly import build_memory
    from episodic.kernel.settings import load_settings
    from episodic.ui.data import LocalSource
    from episodic.ui.server import BackgroundUi
    from episodic.ui.views import Viewer
    from kits.browser_kit import CHROMIUM, CHROMIUM_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("EPISODIC_HOME", str(dreamt["home"]))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    settings = load_settings()
    memory = build_memory(settings)
    folder = dreamt["home"] / "dreams" / "local"
    viewer = Viewer(LocalSource(memory), settings.tenant, dream_dir=folder)
    with BackgroundUi(viewer) as ui, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 420, "height": 900})
            page.goto(ui.url)
            page.goto(f"{ui.base}/dream/2026-W06.md")
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            assert page.locator("#front-matter td").first.inner_text() == "2026-W06"
            text = page.locator("#record").inner_text()
            assert "## " not in text and "**" not in text and "Appendix: Statistics" in text
            hrefs = page.locator("#record a.cite").evaluate_all(
                "links => links.map(a => a.getAttribute('href'))"
            )
            assert len(hrefs) >= 10
            for href in set(hrefs):
                assert memory.store.get(settings.tenant, href.removeprefix("/episode/")) is not None, href
        finally:
            browser.close()
