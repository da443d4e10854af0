"""Issue 40: a viewer only its user can open. `episodic ui` as a user runs it, its browser a real headless
Chromium (Playwright, Debian's `chromium`) started through `BROWSER` by a command that runs in the
foreground until it is done (like `w3m`) and takes a second and a half to start, as a browser does.

Meanwhile another local user's process polls every `/proc/*/cmdline` and tries everything that looks like
a key or a URL on the viewer at once; and another web server on the loopback (127.0.0.1 and localhost,
another port), which the same browser visits after the viewer, records the cookies it is sent. Neither
gets anything usable: no attempt is let in, no cookie reaches it (and none it got opens the viewer);
the browser still opens the viewer, whether its command returns at once or runs until it is done. The page handed to the browser is 0600 in a 0700 folder (another
user cannot read it) and gone once used; its key expires in seconds."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import stat
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from kits.browser_kit import require_browser
from ui.conftest import episodic_ui

TESTS = Path(__file__).resolve().parents[1]
GENEROUS = 120.0
BROWSER_SCRIPT = """
import json, re, sys, time
sys.path.insert(0, {tests!r})
from kits.browser_kit import CHROMIUM, CHROMIUM_ARGS
from playwright.sync_api import sync_playwright

time.sleep(1.5)  # a browser takes this long to start: the key, were it on this command line, is exposed
out = {{"argv": sys.argv[1:]}}
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    page = browser.new_context().new_page()
    try:
        page.goto(sys.argv[1], timeout=60000)
        page.wait_for_selector("text=Review queue", timeout=60000)
        out["url"], out["text"] = page.url, page.inner_text("body")
    except Exception as exc:
        out["error"] = repr(exc)[:500]
    for other in {others!r}:  # the user browses another local server afterwards
        try:
            page.goto(other, timeout=30000)
        except Exception as exc:
            out.setdefault("other_errors", []).append(repr(exc)[:200])
    browser.close()
with open({result!r}, "w") as f:
    json.dump(out, f)
"""


class Recorder:
    """Another web server on the loopback: records the Cookie header of every request it gets."""

    def __init__(self) -> None:
        self.cookies: list[str] = []
        self.requests = 0
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.requests += 1
                recorder.cookies.append(self.headers.get("Cookie") or "")
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )


@pytest.fixture()
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def _ask(base: str, method: str, target: str, body: bytes = b"", **headers: str) -> tuple[int, str]:
    """(status, Set-Cookie) of one request to the viewer; (0, '') when it does not answer in time."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=3)
    try:
        conn.request(method, target, body=body or None, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Set-Cookie") or ""
    except OSError:
        return 0, ""
    finally:
        conn.close()


class Watcher:
    """Another local user: reads every process's command line in a loop, tries whatever it finds."""

    def __init__(self, base: str, printed_key: str) -> None:
        self.base, self.printed_key = base, printed_key
        self.seen: set[str] = set()
        self.files: list[tuple[Path, int, int]] = []  # an opening file seen: (path, its mode, its folder's)
        self.attempts: list[tuple[str, int, str]] = []
        self.stop = threading.Event()
        self.passes = 0  # full reads of /proc done (each line seen tried)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        ends = time.monotonic() + 2 * GENEROUS
        while not self.stop.is_set() and time.monotonic() < ends:
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                        if line not in self.seen:
                            self.seen.add(line)
                            self._try(line)
            self.passes += 1
            time.sleep(0.005)

    def _try(self, line: str) -> None:
        if self.base not in line and "file://" not in line and "key=" not in line:
            return  # not a browser handed this viewer (other processes' servers are left alone)
        for found in re.findall(r"file://(\S+)", line):  # a path: its mode only, another user cannot read it
            path = Path(found)
            with contextlib.suppress(OSError):
                self.files.append((path, path.stat().st_mode, path.parent.stat().st_mode))
        for url in re.findall(r"https?://\S+", line):
            if url.startswith(self.base):
                parts = urlsplit(url)
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                self.attempts.append((url, *_ask(self.base, "GET", target or "/")))
        for key in set(re.findall(r"[A-Za-z0-9_-]{32,}", line)) - {self.printed_key}:
            self.attempts.append((key, *_ask(self.base, "GET", f"/?key={key}")))
            form = urlencode({"key": key}).encode()
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            self.attempts.append((key, *_ask(self.base, "POST", "/open", form, **headers)))


@pytest.mark.parametrize("foreground", [True, False], ids=["foreground-browser", "background-browser"])
def test_no_other_local_user_or_server_gets_into_the_viewer_and_chromium_still_opens_it(
    episodic_home: Path, tmp_path: Path, recorder: Recorder, foreground: bool
) -> None:
    require_browser()
    result = tmp_path / "browser-result.json"
    others = [f"http://127.0.0.1:{recorder.port}/", f"http://localhost:{recorder.port}/"]
    script = tmp_path / "foreground_browser.py"
    script.write_text(BROWSER_SCRIPT.format(tests=str(TESTS), others=others, result=str(result)))
    browser = tmp_path / "browser"  # BROWSER names one command: in the foreground, it runs until done
    run = (
        f'exec "{sys.executable}" "{script}" "$@"' if foreground else f'"{sys.executable}" "{script}" "$@" &'
    )
    browser.write_text(f"#!/bin/sh\n{run}\n")
    browser.chmod(0o700)
    with episodic_ui(env={"BROWSER": str(browser)}) as (process, printed):
        opening = re.search(r"(http://[0-9a-f]{32}\.localhost:\d+)/\?key=(\S+)", printed)
        assert opening, printed
        base = opening.group(1)
        watcher = Watcher(base, opening.group(2))
        watcher.thread.start()
        ends = time.monotonic() + GENEROUS
        while not result.exists() and time.monotonic() < ends and process.poll() is None:
            time.sleep(0.2)
        done = watcher.passes + 2  # one whole pass begun after the browser finished: all it saw, tried
        while watcher.passes < done and watcher.thread.is_alive() and time.monotonic() < ends:
            time.sleep(0.01)
        watcher.stop.set()
        watcher.thread.join(timeout=GENEROUS)
        assert result.exists(), "the browser never finished (a foreground browser must be answered)"
        seen = json.loads(result.read_text())
        stolen = [
            (what, status) for what, status, cookie in watcher.attempts if cookie or status in (200, 303)
        ]
        replayed = [_ask(base, "GET", "/", Cookie=cookie)[0] for cookie in recorder.cookies if cookie]
    assert watcher.attempts or watcher.files, "the watcher saw the browser's command line"
    assert stolen == [], stolen  # nothing it read in /proc opened the viewer
    assert recorder.requests >= 2 and not any("episodic_ui" in c for c in recorder.cookies), recorder.cookies
    assert all(status == 403 for status in replayed), replayed
    assert "error" not in seen and "Review queue" in seen["text"], seen  # Chromium opened the viewer
    assert seen["url"].startswith(base) and "key=" not in seen["url"], seen["url"]
    assert not [a for a in seen["argv"] if "key" in a], seen["argv"]  # the browser's command line: a path
    for path, mode, folder_mode in watcher.files:
        assert stat.S_IMODE(mode) == 0o600 and stat.S_IMODE(folder_mode) == 0o700, (path, oct(mode))
        assert not path.exists(), f"{path} was left behind after it was used"


def test_an_opening_page_not_used_in_time_is_refused_and_deleted(tmp_path: Path) -> None:
    from episodic.ui.security import BROWSER_KEY_SECONDS, Guard

    now = [1000.0]
    guard = Guard(port=1, clock=lambda: now[0])
    page = guard.opening_file(tmp_path / "open")
    key = re.search(r'name="key" value="([^"]+)"', page.read_text())
    assert key and BROWSER_KEY_SECONDS <= 30  # seconds, not minutes
    now[0] += BROWSER_KEY_SECONDS + 0.1
    assert guard.redeem(key.group(1)) is False and not page.exists()
    fresh = guard.opening_file(tmp_path / "open")
    fresh_key = re.search(r'name="key" value="([^"]+)"', fresh.read_text())
    assert fresh_key and guard.redeem(fresh_key.group(1)) is True and not fresh.exists()
    assert guard.redeem(fresh_key.group(1)) is False  # once
    assert guard.csrf_token not in guard.secret and guard.secret not in guard.csrf_token
