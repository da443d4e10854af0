"""Headless Chromium for the viewer tests: the one launch rule of `browser_kit` (Debian's `chromium`,
driven by Playwright from its own path, no browser download), one browser per module."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kits.browser_kit import CHROMIUM, CHROMIUM_ARGS, require_browser

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO_ROOT / "build" / "ui-screenshots"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One browser per module; each test opens its own context (cookies do not leak between tests)."""
    require_browser()  # skips when Chromium or Playwright is absent, fails under CI
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


TEMP_PATH = re.compile(r"[^\s\"'<>]*pytest-of-[^\s\"'<>]*")


def temp_paths(page: Any) -> list[str]:
    """The test's own folders a page shows (a pytest temp path, or the fake home spelled out): none may
    appear in a screenshot the docs publish; the home is shown as `~`."""
    html = page.content()
    home = os.environ.get("HOME", "")
    return TEMP_PATH.findall(html) + (
        [home] if home.startswith(tempfile.gettempdir()) and home in html else []
    )


def screenshot(page: Any, name: str) -> Path:
    assert temp_paths(page) == [], (name, temp_paths(page))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
