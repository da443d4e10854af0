"""The eval page over the committed dev-set report (186 queries, 12 systems) in headless Chromium: the
summary and the chart first, the long sections (all pairs, per-query ranks) folded, so the page stays a
readable height; opened, the per-query table keeps its words whole (one letter a line made it 95,000 px)."""

from __future__ import annotations

import shutil
from typing import Any

from ui.browser import REPO_ROOT, screenshot
from ui.conftest import World

DEV_SET_REPORT = REPO_ROOT / "eval" / "dev-set"
MAX_PAGE_HEIGHT = 6000  # px at a laptop's width, every section as it opens
MAX_ROW_HEIGHT = 120  # px for one per-query row, opened: a query wraps on a few lines, not on 100


def height(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollHeight"))


def test_the_dev_set_eval_page_is_summary_first_and_a_readable_height(chromium: Any, world: World) -> None:
    shutil.copytree(DEV_SET_REPORT, world.eval_dir)
    page = chromium.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(world.ui.url)
    page.goto(f"{world.ui.base}/eval")
    screenshot(page, "eval-dev-set")
    assert height(page) < MAX_PAGE_HEIGHT, height(page)
    summary = page.locator("#eval-summary")
    assert summary.locator("h2").first.inner_text().startswith("Results")  # a heading, not a paragraph
    assert summary.locator("table.report tbody tr").count() == 12  # every system, in the summary
    assert summary.locator("img.chart").evaluate("img => img.naturalWidth") > 0  # the chart beside it
    ranks = page.locator("details.report-section", has_text="Per-query ranks")
    assert ranks.count() == 1 and ranks.get_attribute("open") is None  # folded
    assert not ranks.locator("table").is_visible()
    ranks.locator("summary").click()
    rows = ranks.locator("table.report tbody tr")
    assert rows.count() > 100 and rows.first.is_visible()
    tallest = max(rows.evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)"))
    assert tallest < MAX_ROW_HEIGHT, tallest
    wider = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wider <= 0, wider  # the wide table scrolls inside the page, the page does not widen
