"""The viewer in headless Chromium: search → open → edit → approve; veto → gone from `search_traces` (the
official MCP client) and from the hook's injection; restore; an invalid edit refused with its reason; no
per-run secret, no page. Screenshots of the main views land in build/ui-screenshots/."""

from __future__ import annotations

import asyncio
import io
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from episodic.hooks import payload as hook_payload
from episodic.hooks import prompt as hook
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ui.browser import screenshot
from ui.conftest import World
from ui.sessions import SESSIONS

CHECKOUT_ID = SESSIONS[0][0]
QUERY = "checkout total is blank for a discounted cart item"


async def _search(url: str, token: str, query: str) -> list[dict[str, Any]]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=30)
    )
    async with http, Client(streamable_http_client(url, http_client=http)) as client:  # type: ignore[arg-type]
        found = await client.call_tool("search_traces", {"query": query, "include_unverified": True})
        assert found.is_error is False
        results: list[dict[str, Any]] = found.structured_content["results"]
        return results


def mcp_search(world: World, query: str = QUERY) -> list[str]:
    """search_traces through the official MCP SDK client (in its own thread: Playwright owns this one)."""
    with ThreadPoolExecutor(1) as pool:
        results = pool.submit(asyncio.run, _search(world.mcp_url, world.token, query)).result()
    return [r["session_id"] for r in results]


def hook_injects(world: World, monkeypatch: pytest.MonkeyPatch, prompt: str = QUERY + " again today") -> str:
    """The prompt hook's output for a prompt (its whole real path: settings, HTTP, formatting)."""
    monkeypatch.setenv("EPISODIC_URL", world.mcp_url)
    monkeypatch.setenv("EPISODIC_TOKEN", world.token)
    monkeypatch.setenv("EPISODIC_HOOK_AUTOSTART", "false")
    monkeypatch.setenv("EPISODIC_HOOK_BUDGET_SECONDS", "10")
    monkeypatch.setattr(hook_payload, "_CONFIG", {})
    monkeypatch.setattr(hook_payload, "STARTED", time.monotonic())
    out = io.StringIO()
    assert hook.main(io.StringIO(json.dumps({"prompt": prompt})), out) == 0
    return out.getvalue()


def open_viewer(chromium: Any, world: World) -> Any:
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.goto(world.ui.url)
    return page


def test_search_open_edit_approve(chromium: Any, world: World) -> None:
    from episodic.history.service import link_session

    link_session(world.memory, world.settings.tenant, CHECKOUT_ID, "https://github.com/acme/shop/issues/42")
    page = open_viewer(chromium, world)
    assert "key=" not in page.url  # the secret moved into a cookie
    page.fill("#query", QUERY)
    page.click("#search")
    first = page.locator("#results .result").first
    assert first.get_attribute("data-session") == CHECKOUT_ID
    assert "similarity" in first.inner_text()
    screenshot(page, "browse-search")
    first.locator("a.open").click()
    assert page.locator("#survey").inner_text().strip()  # the scrubbed survey the distiller read
    assert "pytest" in page.locator("#evidence").inner_text()  # the check after the last edit
    links = page.locator("#session-links")
    assert "acme/shop#42 (confirmed" in links.inner_text()  # the work item, from the history store
    assert links.locator("a").get_attribute("href") == "https://github.com/acme/shop/issues/42"
    assert f"claude --resume {CHECKOUT_ID}" in page.locator("#resume").inner_text()
    screenshot(page, "episode")
    page.click("#toggle-edit")
    new_insight = "Apply the discount before rounding; rounding first turns small totals into zero."
    page.fill("#edit-insight", new_insight)
    page.click("#save-edit")
    assert "edit done" in page.locator("#done").inner_text()
    assert page.locator("#insight").inner_text() == new_insight
    assert page.locator("#original").count() == 1  # the distilled card kept beside the edit
    page.click("#approve")
    assert "approved" in page.locator("#review-state").inner_text()
    stored = world.memory.store.get(world.settings.tenant, CHECKOUT_ID)
    assert stored is not None and stored.card.insight == new_insight
    assert stored.review is not None and stored.review.state.value == "approved"
    assert stored.review.original is not None and stored.review.original.insight != new_insight
    screenshot(page, "episode-approved")


def test_veto_hides_everywhere_and_restore_brings_it_back(
    chromium: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert mcp_search(world)[0] == CHECKOUT_ID
    assert CHECKOUT_ID in hook_injects(world, monkeypatch)
    page = open_viewer(chromium, world)
    page.goto(f"{world.ui.base}/episode/{CHECKOUT_ID}")
    page.fill("#veto-reason-input", "the insight blames rounding, but the real cause was elsewhere")
    page.click("#veto")
    assert "the real cause was elsewhere" in page.locator("#veto-reason").inner_text()
    screenshot(page, "episode-vetoed")
    assert CHECKOUT_ID not in mcp_search(world)  # the official MCP client: gone from search_traces
    assert CHECKOUT_ID not in hook_injects(world, monkeypatch)  # and from the hook's injection
    page.goto(f"{world.ui.base}/?query={QUERY.replace(' ', '+')}")
    assert page.locator(f"#results [data-session='{CHECKOUT_ID}']").count() == 0
    page.goto(f"{world.ui.base}/episode/{CHECKOUT_ID}")
    page.click("#restore")
    assert "restore done" in page.locator("#done").inner_text()
    assert mcp_search(world)[0] == CHECKOUT_ID
    assert CHECKOUT_ID in hook_injects(world, monkeypatch)


def test_invalid_edit_is_refused_with_the_reason(chromium: Any, world: World) -> None:
    page = open_viewer(chromium, world)
    page.goto(f"{world.ui.base}/episode/{CHECKOUT_ID}")
    page.click("#toggle-edit")
    page.fill("#edit-insight", "the bug is in /home/dev/shop/app/pricing.py near the rounding helper")
    page.click("#save-edit")
    error = page.locator("#review-error").inner_text()
    assert "refused" in error and "file path" in error
    screenshot(page, "edit-refused")
    stored = world.memory.store.get(world.settings.tenant, CHECKOUT_ID)
    assert stored is not None and "pricing.py" not in stored.card.insight and stored.review is None


def test_a_page_without_the_per_run_secret_is_refused(chromium: Any, world: World) -> None:
    context = chromium.new_context()
    page = context.new_page()
    response = page.goto(f"{world.ui.base}/episode/{CHECKOUT_ID}")
    assert response is not None and response.status == 403
    assert "per-run secret" in page.locator("#refusal").inner_text()
    assert CHECKOUT_ID not in page.content()


def test_timeline_queue_eval_and_dream_pages(chromium: Any, world: World) -> None:
    page = open_viewer(chromium, world)
    buckets = page.locator("#timeline .bucket").all_inner_texts()
    assert [b.split()[0] for b in buckets] == ["2026-03-16", "2026-03-09", "2026-03-02"]  # newest first
    page.select_option("select[name=group]", "week")
    page.click("#search")
    assert page.locator("#timeline .bucket").first.inner_text().startswith("week of 2026-03-16")
    screenshot(page, "browse-timeline")
    page.goto(f"{world.ui.base}/queue")
    queued = [page.locator("#queue .result").nth(i).get_attribute("data-session") for i in range(3)]
    assert queued == [s[0] for s in reversed(SESSIONS)]  # all verified: newest first
    screenshot(page, "queue")
    page.goto(f"{world.ui.base}/eval")
    assert "No eval report" in page.locator("#eval-empty").inner_text()
    page.goto(f"{world.ui.base}/dream")
    assert "No dream records" in page.locator("#dream-empty").inner_text()


REPORT = """# Retrieval evaluation

Command: `episodic eval --transcripts T --queries Q --report R`

| system | recall@1 | recall@3 | MRR |
|---|---|---|---|
| **cards** | 0.61 | 0.77 | 0.69 |
| raw-bm25 | 0.10 | 0.15 | 0.13 |

Wall time: build 1.0 s.
"""


def test_eval_and_dream_pages_show_their_folders(chromium: Any, world: World) -> None:
    from PIL import Image, ImageDraw  # a bar chart as a PNG, without matplotlib's second of imports

    report = world.eval_dir
    report.mkdir()
    (report / "report.md").write_text(REPORT, encoding="utf-8")
    chart = Image.new("RGB", (400, 200), "white")
    for i, recall in enumerate((0.77, 0.15)):  # cards, raw-bm25
        ImageDraw.Draw(chart).rectangle(
            (60 + 160 * i, 190 - int(170 * recall), 160 + 160 * i, 190), "steelblue"
        )
    chart.save(report / "chart.png")
    dream = world.dream_dir
    dream.mkdir(parents=True)
    (dream / "2026-W11.json").write_text(
        json.dumps({"title": "Week 11: cookie and rounding bugs", "week": "2026-W11"})
    )
    (dream / "broken.json").write_text("{not json")
    page = open_viewer(chromium, world)
    page.goto(f"{world.ui.base}/eval")
    assert page.locator("table.report td").first.inner_text() == "cards"  # the bold marks dropped
    assert page.locator("img.chart").evaluate("img => img.naturalWidth") > 0  # served locally
    screenshot(page, "eval")
    page.goto(f"{world.ui.base}/dream")
    assert "Week 11: cookie and rounding bugs" in page.locator("#dream-records").inner_text()
    assert "broken.json: not JSON" in page.content()
