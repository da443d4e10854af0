"""`episodic ui` as a service manager or a headless box meets it: stopped by SIGTERM it leaves nothing in
the temp folder (its `episodic-ui-*` folder held the page with a one-time key); with no browser to open it
says how to get in instead of saying nothing."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ui.conftest import RUN_WITH_CTRL_C

HINT_WAIT_SECONDS = 120.0  # an upper bound on a loaded machine, never a measure of speed


@contextmanager
def ui_process(tmp: Path, browser: str) -> Iterator[tuple[subprocess.Popen[str], str, list[str]]]:
    """`episodic ui` with its temp folder at `tmp`, BROWSER=`browser`, no display and no other browser on
    PATH; yields it, the URL line and its stderr lines as they come."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
    }
    env.update(
        TMPDIR=str(tmp),
        BROWSER=browser,
        PATH=str(Path(sys.executable).parent),  # no console browser (w3m, lynx) to fall back on
        EPISODIC_EMBEDDER="hashing",
    )
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_WITH_CTRL_C, "ui"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[str] = []
    assert process.stderr is not None and process.stdout is not None
    threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True).start()  # type: ignore[arg-type]
    try:
        line = process.stdout.readline()
        assert re.search(r"http://[0-9a-f]{32}\.localhost:\d+/", line), (line, errors)
        yield process, line, errors
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def left_in(tmp: Path) -> list[str]:
    return sorted(str(path.relative_to(tmp)) for path in tmp.rglob("*"))


def test_sigterm_leaves_nothing_in_the_temp_folder(episodic_home: Path, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with ui_process(tmp, shutil.which("true") or "/bin/true") as (
        process,
        _,
        errors,
    ):  # a browser that starts and never posts the page
        deadline = time.monotonic() + HINT_WAIT_SECONDS
        while not list(tmp.rglob("open-*.html")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(tmp.rglob("open-*.html")), left_in(tmp)  # the browser's page is there, unused
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, errors
    assert left_in(tmp) == [], left_in(tmp)


def test_no_browser_prints_a_working_way_in(episodic_home: Path, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with ui_process(tmp, "no-such-browser") as (process, line, errors):
        port = re.search(r"\.localhost:(\d+)/", line).group(1)  # type: ignore[union-attr]
        deadline = time.monotonic() + HINT_WAIT_SECONDS
        while not any("no browser could be opened" in e for e in errors) and time.monotonic() < deadline:
            time.sleep(0.2)
        said = "".join(errors)
        assert "no browser could be opened" in said, said
        assert "Firefox or Chromium" in said and f"ssh -L {port}:127.0.0.1:{port}" in said, said
        assert "episodic ui --host 127.0.0.1" in said, said
        assert not list(tmp.rglob("open-*.html")), left_in(tmp)  # its one-time page is gone at once
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert left_in(tmp) == []


def test_a_browser_that_never_opens_the_page_gets_the_ways_in_said(
    episodic_home: Path, tmp_path: Path
) -> None:
    """A browser that starts but never reaches the viewer (a console browser asks the system resolver,
    which does not know `<name>.localhost`): once its one-time page expires, the ways in are said."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with ui_process(tmp, shutil.which("true") or "/bin/true") as (process, _, errors):
        deadline = time.monotonic() + HINT_WAIT_SECONDS
        while (
            not any("no browser has opened the viewer" in e for e in errors) and time.monotonic() < deadline
        ):
            time.sleep(0.5)
        said = "".join(errors)
        assert "no browser has opened the viewer" in said and "episodic ui --host 127.0.0.1" in said, said
        assert not list(tmp.rglob("open-*.html")), left_in(tmp)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert left_in(tmp) == []
