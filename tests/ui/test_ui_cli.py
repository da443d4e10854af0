"""`episodic ui --no-open` as a user runs it (README): prints a loopback URL holding a one-time key;
that URL serves the page, the bare address is refused."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ui.conftest import episodic_ui


def test_episodic_ui_serves_on_loopback_behind_the_printed_secret(episodic_home: Path) -> None:
    with episodic_ui("--no-open") as (_, line):
        found = re.search(r"(http://[0-9a-f]{32}\.localhost:(\d+)/)\?key=(\S+)", line)
        assert found, line
        base, secret_url = found.group(1), found.group(0)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base, timeout=10)
        assert refused.value.code == 403
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # keeps the cookie
        with browser.open(secret_url, timeout=10) as page:  # the key becomes a cookie, then the page
            assert page.url == base and "Review queue" in page.read().decode()


def test_the_dream_page_reads_where_episodic_dream_writes(tmp_path: Path) -> None:
    from episodic.assembly.dream import dream_adapters
    from episodic.dream.archive import LocalArchive
    from episodic.kernel.settings import Settings
    from episodic.ui.app import build_viewer
    from episodic.ui.data import LocalSource

    settings = Settings(home=tmp_path / "home", tenant="alice")
    viewer = build_viewer(settings, source=LocalSource.__new__(LocalSource))
    archive = dream_adapters(settings).archive
    assert isinstance(archive, LocalArchive)
    assert viewer.dream_dir == archive.folder("alice")
