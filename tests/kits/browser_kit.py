"""A real headless Chromium for page tests: Debian's `chromium` driven by Playwright (no browser download).

`page_screenshot(path, out)` loads a local file and writes a full-page PNG; `is_blank(png)` tells a page
that rendered nothing. Skips when Chromium or Playwright is absent, except under CI, where it fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("EPISODIC_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_browser() -> None:
    missing = []
    if not Path(CHROMIUM).is_file():
        missing.append(f"chromium ({CHROMIUM}; apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (scripts/install --dev)")
    if missing:
        message = "headless browser unavailable: " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def page_screenshot(page_path: Path, out: Path, width: int = 1280) -> dict[str, object]:
    """Render `page_path` (a local file) and save a full-page screenshot; returns what the page showed."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            blocked: list[str] = []
            # a static page loads nothing from outside: any other request is recorded and refused
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith("file://")
                    else (blocked.append(route.request.url), route.abort())[1]
                ),
            )
            page.goto(page_path.resolve().as_uri())
            page.screenshot(path=str(out), full_page=True)
            return {
                "title": page.title(),
                "text": page.inner_text("body"),
                "blocked_requests": blocked,
                "height": page.evaluate("document.body.scrollHeight"),
            }
        finally:
            browser.close()


def is_blank(png: Path) -> bool:
    """True when the screenshot is a single colour (nothing was drawn)."""
    from PIL import Image

    with Image.open(png) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    return colours is not None and len(colours) <= 1
