"""`episodic ui --no-open` as a user runs it (README): prints a loopback URL holding the per-run secret;
that URL serves the page, the bare address is refused."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest


def test_episodic_ui_serves_on_loopback_behind_the_printed_secret(episodic_home: Path) -> None:
    env = {**os.environ, "EPISODIC_EMBEDDER": "hashing"}
    command = [sys.executable, "-c", "from episodic.cli import main; main()", "ui", "--no-open"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/)\?key=(\S+)", line)
        assert found, line + (process.stderr.read() if process.poll() is not None and process.stderr else "")
        base, secret_url = found.group(1), found.group(0)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base, timeout=10)
        assert refused.value.code == 403
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # keeps the cookie
        with browser.open(secret_url, timeout=10) as page:  # the secret becomes a cookie, then the page
            assert page.url == base and "Review queue" in page.read().decode()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_the_dream_page_reads_where_episodic_dream_writes(tmp_path: Path) -> None:
    from episodic.dream.archive import LocalArchive
    from episodic.dream.service import build_archive
    from episodic.settings import Settings
    from episodic.ui.app import build_viewer
    from episodic.ui.data import LocalSource

    settings = Settings(home=tmp_path / "home", tenant="alice")
    viewer = build_viewer(settings, source=LocalSource.__new__(LocalSource))
    archive = build_archive(settings)
    assert isinstance(archive, LocalArchive)
    assert viewer.dream_dir == archive.folder("alice")
