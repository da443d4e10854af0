"""The viewer in the two browsers users open it in, each handed what `episodic ui` hands a browser (the
page only this user can read, which posts the one-time key to `<32 hex>.localhost:<port>/open`): opened,
searched and a card read, in headless Chromium (Playwright) and headless Firefox (Marionette). Both resolve
`*.localhost` to loopback themselves. Also what a page asks for on its own: an icon, never a 404."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from ui.conftest import World
from ui.firefox import Firefox, firefox  # noqa: F401  (the fixture)
from ui.sessions import SESSIONS, turn_lines

CHECKOUT_ID = SESSIONS[0][0]
QUERY = "checkout total is blank for a discounted cart item"
LOAD_SECONDS = 120.0  # an upper bound for a page on a loaded machine, never a measure of speed


def wait_for(read: Any, wanted: str) -> str:
    """The page's text once it holds `wanted` (the opening page posts and refreshes on its own)."""
    deadline = time.monotonic() + LOAD_SECONDS
    text = ""
    while time.monotonic() < deadline:
        try:
            text = read()
        except Exception:  # the page is between two documents
            text = ""
        if wanted in text:
            return text
        time.sleep(0.2)
    raise AssertionError(f"{wanted!r} never shown; last text: {text[:500]!r}")


def test_firefox_opens_searches_and_reads_a_card(firefox: Firefox, world: World, tmp_path: Path) -> None:  # noqa: F811
    opening = world.ui.guard.opening_file(tmp_path / "opening")
    firefox.goto(opening.as_uri())  # what `episodic ui` hands the browser
    wait_for(firefox.text, "Review queue")
    assert re.fullmatch(r"http://[0-9a-f]{32}\.localhost:\d+/", firefox.url), firefox.url
    assert not opening.exists()  # used once, then deleted
    firefox.type("#query", QUERY)
    firefox.click("#search")
    wait_for(lambda: firefox.text("#results"), "similarity")
    first = firefox.find("#results .result a.open")
    firefox.command("WebDriver:ElementClick", {"id": first})
    wait_for(lambda: firefox.text("#problem"), "discounted item")
    assert f"/episode/{CHECKOUT_ID}" in firefox.url
    assert "pytest" in firefox.text("#evidence")  # the check after the last edit
    assert firefox.text("#survey").strip()  # the scrubbed survey the distiller read


def test_chromium_opens_searches_and_reads_a_card_and_asks_for_nothing_missing(
    chromium: Any, world: World, tmp_path: Path
) -> None:
    missing: list[str] = []
    page = chromium.new_context().new_page()
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(world.ui.guard.opening_file(tmp_path / "opening").as_uri())
    wait_for(lambda: page.inner_text("body"), "Review queue")
    page.fill("#query", QUERY)
    page.click("#search")
    page.locator("#results .result a.open").first.click()
    assert "discounted item" in page.locator("#problem").inner_text()
    assert "pytest" in page.locator("#evidence").inner_text()
    page.goto(f"{world.ui.base}/no-such-page")  # a refusal page names its icon too
    page.wait_for_timeout(500)  # the icon is fetched after the load event: give it the chance to be asked
    assert missing == [f"{world.ui.base}/no-such-page"], missing
    icons = page.evaluate(
        "Promise.all([...document.querySelectorAll('link[rel=icon]')].map(l => fetch(l.href).then(r => r.status)))"
    )
    assert icons == [200], icons  # the page names its icon, and it is there


def test_favicon_ico_is_an_icon_not_a_404(world: World) -> None:
    import http.client

    guard = world.ui.guard
    for cookie in ("", f"episodic_ui={guard.secret}"):  # asked for with or without the cookie
        conn = http.client.HTTPConnection(guard.host, guard.port, timeout=30)
        try:
            conn.request(
                "GET", "/favicon.ico", headers={"Host": f"{guard.name}:{guard.port}", "Cookie": cookie}
            )
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        assert response.status == 200, (cookie, response.status)
        assert response.getheader("Content-Type", "").startswith("image/") and b"<svg" in body


def test_why_panel_names_the_command_of_a_shell_edit(chromium: Any, world: World) -> None:
    """A session whose last edit was a shell command: the panel shows the command, not `Bash`."""
    from episodic.core.ingest import index_sessions

    session_id = "44444444-dddd-4ddd-8ddd-000000000004"
    lines = turn_lines(
        session_id,
        0,
        "The invoice footer prints last year's date.",
        "Fixed; the tests pass.",
        "2026-03-20",
        None,
    )
    command = "sed -i 's/YEAR = 2025/YEAR = date.today().year/' app/invoice.py"
    for line in lines:
        for block in (
            line.get("message", {}).get("content", [])
            if isinstance(line.get("message", {}).get("content"), list)
            else []
        ):
            if block.get("type") == "tool_use" and block.get("name") == "Edit":
                block["name"], block["input"] = "Bash", {"command": command}
    folder = next(world.projects.iterdir())
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert index_sessions(world.memory, None, world.settings.tenant).indexed == 1
    page = chromium.new_context().new_page()
    page.goto(world.ui.url)
    page.goto(f"{world.ui.base}/episode/{session_id}")
    panel = page.locator(".evidence-view").inner_text()
    assert f"Last edit: Bash: {command}" in panel, panel
