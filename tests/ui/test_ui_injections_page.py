"""The injections page in headless Chromium: after the hook's searches were recorded (search_traces with the
receiving session, as the prompt hook asks it) and one session's use was read, the page shows injections per
session, the share used, the cards given most with their use rates (each a link to its episode) and the
characters of injected text per day; another tenant's records never appear."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from episodic.core.injected import injection_store
from episodic.kernel.auth import READ, Principal
from episodic.mcp.tools import default_registry
from fakes.injection_records import given_record

from ui.browser import screenshot
from ui.conftest import World

QUERY = "checkout total is blank for a discounted cart item"


def ask_as_the_hook(world: World, session_id: str) -> list[str]:
    arguments = {"query": QUERY, "k": 3, "include_unverified": False, "receiving_session": session_id}
    principal = Principal(tenant_id=world.settings.tenant, scopes=frozenset({READ}))
    answer = default_registry(world.memory).call("search_traces", arguments, principal)
    return [r["session_id"] for r in answer["structuredContent"]["results"]]


def test_the_injections_page_shows_what_was_given_and_used(chromium: Any, world: World) -> None:
    given = ask_as_the_hook(world, "receiving-one") + ask_as_the_hook(world, "receiving-two")
    assert given and ask_as_the_hook(world, "receiving-one") == []  # never twice in a session
    store = injection_store(world.memory)
    assert store is not None
    first = store.of_session(world.settings.tenant, "receiving-one")[0]
    store.set_uses(
        world.settings.tenant, "receiving-one", {first.record_id: ("opened", "opened:get_episode", "")}
    )
    other = given_record("someone-else", "their-session", "their-card-0000", chars=999)
    store.add("someone-else", [other])

    page = chromium.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(world.ui.url)
    page.click("nav >> text=Injections")
    screenshot(page, "injections")
    summary = page.locator("#injections-summary").inner_text()
    assert f"{len(given)} in 2 sessions" in summary
    assert page.locator("#share-used").inner_text() == "100% of 1 read"  # the one read was opened
    top = page.locator("#top-cards tbody tr")
    assert top.count() == len(set(given))
    assert "their-card" not in page.content() and "999" not in page.locator("#per-day").inner_text()
    day = page.locator("#per-day tbody tr")
    assert day.count() == 1 and datetime.now(UTC).date().isoformat() in day.inner_text()
    link = top.first.locator("a")
    card = link.get_attribute("href").removeprefix("/episode/")  # type: ignore[union-attr]
    assert card in given
    link.click()
    assert page.url.endswith(f"/episode/{card}") and "no page at" not in page.content()
