"""The viewer's pages at a laptop's width (1366 px) and a phone's (420 px) in headless Chromium: search,
one episode, the review queue and one dream record. At each width nothing is wider than the window, every
card heading is one line (the first sentence of its problem, not the whole prompt), search results carry
the strong/weak label the agent meets, and a dream record is HTML with its front matter as a table.

Screenshots land in build/ui-screenshots/; `EPISODIC_SCREENSHOT_DIR=docs/screenshots` refreshes the
committed ones (palette PNGs, a few tens of KB each)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from episodic.core.ingest import index_sessions
from episodic.dream.record import Citation, DreamRecord, Item, render_record
from episodic.kernel.models import Confidence

from ui.browser import REPO_ROOT, SCREENSHOTS, temp_paths
from ui.conftest import World
from ui.sessions import SESSIONS, write_session

WIDTHS = (1366, 420)
LONG_ID = "44444444-dddd-4ddd-8ddd-000000000004"
# a first prompt as people type them: several sentences over several lines (the heuristic card's problem)
LONG_PROMPT = (
    "The nightly export job of the reporting service times out after the database upgrade and the CSV it "
    "writes for the finance team is cut short at the first large customer table.\n"
    "It started after the upgrade last Tuesday. The export query used to take two minutes and now runs "
    "for more than an hour before the scheduler kills it.\n"
    "Please find out why the query became slow and make the export finish again; keep the CSV format."
)
LONG_CLOSING = (
    "The upgrade dropped an index the export query needed; recreating it fixed the job and the tests pass."
)
QUERY = "nightly export job times out after the database upgrade"
WEEK_FILE = "2026-W11.md"
# read when the module is imported: the suite's autouse fixture clears EPISODIC_* variables before a test
SHOTS = REPO_ROOT / os.environ.get("EPISODIC_SCREENSHOT_DIR", str(SCREENSHOTS))


def dream_record() -> str:
    """A record as `episodic dream` writes it, citing the world's sessions."""
    day = {sid: d for sid, _, _, d in SESSIONS}

    def cite(sid: str) -> Citation:
        return Citation(session_id=sid, day=day.get(sid, "2026-03-16"))

    export, checkout = SESSIONS[2][0], SESSIONS[0][0]
    record = DreamRecord(
        week="2026-W11",
        period="2026-03-09 to 2026-03-15",
        sessions_analysed=3,
        mode="offline",
        generated_at="2026-03-16T06:00:00+00:00",
        input_range="2026-03-09T00:00:00+00:00 to 2026-03-16T00:00:00+00:00 (exclusive)",
        newest_session="2026-03-16T10:03+00:00",
        sections={
            "narrative": [
                Item(
                    text="The week's work was about “Nightly export times out after the database upgrade” "
                    "(2 sessions over 2 days).",
                    cites=[cite(export), cite(LONG_ID)],
                ),
                Item(
                    text="Decided along the way: “Recreate the dropped index in the migration, not by hand”.",
                    cites=[cite(export)],
                ),
            ],
            "themes": [
                Item(
                    text="**Nightly export times out after the database upgrade**: 2 session(s), "
                    "2026-03-16 (2 verified)",
                    cites=[cite(export), cite(LONG_ID)],
                    score=0.82,
                )
            ],
            "decisions": [
                Item(
                    text="Recreate the dropped index in the migration, not by hand, so every environment "
                    "gets it.",
                    cites=[cite(export)],
                    day="2026-03-16",
                )
            ],
            "insights": [
                Item(
                    text="A database upgrade can drop indexes that a slow query silently relied on.",
                    cites=[cite(export)],
                )
            ],
            "projects": [
                Item(text="shop: 3 sessions (3 verified), 1 files touched.", cites=[cite(checkout)])
            ],
        },
        statistics=[
            Item(
                text="3 sessions across 1 project(s), mostly shop (3); outcomes: 3 verified.",
                cites=[cite(checkout), cite(export)],
            )
        ],
        counters={"sessions_analysed": 3, "claims_without_citation": 0},
        sessions={sid[:8]: sid for sid in (checkout, export, LONG_ID)},
        empty_reasons={"unfinished": "every thread's last session ended verified.", "risks": "none."},
    )
    return render_record(record)


def shot(page: Any, name: str) -> Path:
    """A viewport screenshot, reduced to a 256-colour palette PNG (small enough to commit)."""
    from PIL import Image

    assert temp_paths(page) == [], (name, temp_paths(page))  # the docs publish these
    folder = SHOTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=256).save(path, optimize=True)
    return path


def overflow(page: Any) -> int:
    """How many pixels the page is wider than its window (0: it fits)."""
    return int(
        page.evaluate(
            "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth"
        )
    )


def multi_line_headings(page: Any) -> list[str]:
    """The one-line headings that wrap onto a second line (by their rendered height)."""
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll('.one-line')].filter(el => {
                const style = getComputedStyle(el);
                const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.6;
                return el.getBoundingClientRect().height > line * 1.5 || style.whiteSpace !== 'nowrap';
            }).map(el => el.textContent.trim())"""
        )
    )


@pytest.fixture()
def pages(world: World) -> dict[str, str]:
    write_session(world.projects, LONG_ID, LONG_PROMPT, LONG_CLOSING, "2026-03-16")
    assert index_sessions(world.memory, None, world.settings.tenant).indexed == 1
    dream = world.dream_dir
    dream.mkdir(parents=True, exist_ok=True)
    (dream / WEEK_FILE).write_text(dream_record(), encoding="utf-8")
    base = world.ui.base
    return {
        "search": f"{base}/?query={QUERY.replace(' ', '+')}",
        "episode": f"{base}/episode/{LONG_ID}",
        "queue": f"{base}/queue",
        "dream-record": f"{base}/dream/{WEEK_FILE}",
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_each_page_fits_the_width_with_one_line_headings(
    chromium: Any, world: World, pages: dict[str, str], width: int
) -> None:
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(world.ui.url)  # the opening URL: its one-time key becomes the session cookie
    for name, url in pages.items():
        page.goto(url)
        shot(page, f"{name}-{width}")
        assert overflow(page) <= 0, (name, width, overflow(page))
        assert page.locator(".one-line").count() >= 1, (
            name,
            width,
        )  # the page's headings are kept to one line
        assert multi_line_headings(page) == [], (name, width)
    context.close()


def test_a_heading_is_the_first_sentence_of_the_problem(
    chromium: Any, world: World, pages: dict[str, str]
) -> None:
    page = chromium.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(world.ui.url)
    page.goto(pages["episode"])
    heading = page.locator("#heading").inner_text()
    stored = world.memory.store.get(world.settings.tenant, LONG_ID)
    assert stored is not None and len(stored.card.problem) > len(heading)
    assert heading.startswith("The nightly export job") and "\n" not in heading and len(heading) <= 121
    assert "It started after the upgrade" not in heading  # the second sentence is not the heading
    assert "It started after the upgrade" in page.locator("#problem").inner_text()  # the whole problem, once
    page.goto(pages["queue"])
    row = page.locator(f"#queue [data-session='{LONG_ID}']")
    assert row.locator("h3").inner_text() == heading
    assert "It started after the upgrade" not in row.inner_text()  # not repeated underneath


def test_search_results_carry_the_label_the_agent_meets(
    chromium: Any, world: World, pages: dict[str, str]
) -> None:
    from episodic.core.search import search_traces

    expected = {
        h.record.session_id: (h.confidence.value if h.confidence else "below")
        for h in search_traces(world.memory, world.settings.tenant, QUERY, k=world.settings.max_k)
    }
    assert expected[LONG_ID] in (Confidence.STRONG.value, Confidence.WEAK.value, Confidence.FAINT.value)
    page = chromium.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(world.ui.url)
    page.goto(pages["search"])
    rows = page.locator("#results .result")
    assert rows.count() == len(expected) >= 2
    for i in range(rows.count()):
        row = rows.nth(i)
        tier = row.locator(".confidence").inner_text()
        assert tier == expected[row.get_attribute("data-session")]
        given = row.locator("pre.given")
        if tier == "strong":  # the packed card the hook and search_traces give
            assert given.inner_text().startswith(f"Episode {row.get_attribute('data-session')}")
        elif tier in ("weak", "faint"):  # a one-line entry, labelled
            assert given.inner_text().startswith("- ") and f"[{tier}]" in given.inner_text()
        else:
            assert given.count() == 0


def test_a_dream_record_is_html_with_its_front_matter_as_a_table(
    chromium: Any, world: World, pages: dict[str, str]
) -> None:
    page = chromium.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(world.ui.url)
    page.goto(f"{world.ui.base}/dream")
    page.locator("#dream-records a").first.click()
    assert page.url.endswith(f"/dream/{WEEK_FILE}")
    assert page.locator("#record-title").inner_text() == "Week 2026-W11 · 3 sessions"
    front = dict(
        zip(
            page.locator("#front-matter th").all_inner_texts(),
            page.locator("#front-matter td").all_inner_texts(),
            strict=True,
        )
    )
    assert front["week"] == "2026-W11" and front["sessions analysed"] == "3" and front["mode"] == "offline"
    record = page.locator("#record")
    headings = record.locator("h2").all_inner_texts()
    assert headings[0] == "Narrative of the Week" and "Appendix: Statistics" in headings
    assert (
        record.locator("strong").first.inner_text() == "Nightly export times out after the database upgrade"
    )
    assert (
        "---" not in record.inner_text()
        and "**" not in record.inner_text()
        and "## " not in record.inner_text()
    )
    cite = record.locator("a.cite").first  # a citation opens its episode
    assert cite.get_attribute("href").startswith("/episode/")
    cite.click()
    assert page.locator("#heading").inner_text()
