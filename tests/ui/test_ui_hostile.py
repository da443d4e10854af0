"""Issue 31, the viewer on real loopback HTTP: a bad Content-Length is a 400; the opening URL's key works
once (the browser's command line, readable by every local user in /proc, holds nothing reusable); the
endpoint token comes from the environment or a file, never argv; percent-encoded session ids open."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import suppress
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from episodic.core.ingest import index_sessions

from ui.conftest import World, episodic_ui
from ui.sessions import SESSIONS, write_session

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def request(
    url: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One raw request: headers exactly as given (http.client would compute a Content-Length)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.putrequest(method, parts.path + (f"?{parts.query}" if parts.query else ""))
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def cookie(world: World) -> dict[str, str]:
    return {"Cookie": f"episodic_ui={world.ui.guard.secret}"}


def test_a_bad_content_length_is_a_400(world: World) -> None:
    target = f"{world.ui.base}/episode/{SESSIONS[0][0]}"
    post = {**cookie(world), **FORM, "Origin": world.ui.base}
    for bad in ("abc", "-5", "1e3", " ", "²"):  # "²".isdigit(), but int() refuses it
        status, _, body = request(target, "POST", {**post, "Content-Length": bad})
        assert status == 400 and b"Content-Length" in body, (bad, status)
    assert request(target, "POST", {**post, "Content-Length": "9" * 5000})[0] == 413
    assert request(target, "POST", {**post, "Content-Length": "0" * 30 + "7"}, b"action=")[0] == 403  # csrf


def test_an_opening_url_works_once(world: World) -> None:
    url = world.ui.url
    status, headers, _ = request(url)
    assert status == 303 and headers["set-cookie"].startswith("episodic_ui=")
    secret = headers["set-cookie"].split(";", 1)[0]
    assert request(f"{world.ui.base}/", headers={"Cookie": secret})[0] == 200
    again, _, body = request(url)  # read from /proc by another local user, after the browser used it
    assert again == 403 and b"already used" in body
    assert request(url, headers={"Cookie": secret})[0] == 303  # the browser that used it reloads: fine
    key = urlsplit(url).query.removeprefix("key=")
    assert key not in secret  # the cookie's secret is never the URL's key


def wait_for(path: Path, process: subprocess.Popen[str]) -> str:
    """The file's text once written (the fake browser runs in the background); fails if `ui` exits."""
    for _ in range(1200):  # a generous deadline: 120 s
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
    raise AssertionError(f"{path} never written")


def test_the_browsers_command_line_holds_no_key_and_its_page_works_once(
    episodic_home: Path, tmp_path: Path
) -> None:
    argv_file, page_file = tmp_path / "argv.txt", tmp_path / "page.txt"
    fetch = (  # what the browser does with the opening page: post its form once, keep the cookie
        "import re, sys, urllib.parse as p, urllib.request as u, pathlib, os, socket; "
        "g = socket.getaddrinfo; "  # `<name>.localhost` is loopback, as a browser resolves it
        "socket.getaddrinfo = lambda h, *a, **k: g('127.0.0.1' if h.endswith('.localhost') else h, *a, **k); "
        "f = pathlib.Path(p.urlsplit(sys.argv[1]).path); t = f.read_text(); "
        "mode = oct(os.stat(f).st_mode & 0o777), oct(os.stat(f.parent).st_mode & 0o777); "
        "a = re.search('action=.([^\\x22]+)', t).group(1); k = re.search('value=.([^\\x22]+)', t).group(1); "
        "o = u.build_opener(u.HTTPCookieProcessor()); "
        "r = o.open(a, data=p.urlencode({'key': k}).encode(), timeout=30); r.read(); "
        "r = o.open(a.rsplit('/', 1)[0] + '/', timeout=30); "
        "print(r.status, 'Review queue' in r.read().decode(), f.exists(), *mode, a, k)"
    )
    browser = tmp_path / "browser.sh"
    browser.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" > {argv_file}\n'
        f'("{sys.executable}" -c "{fetch}" "$1" > {page_file}.tmp 2>&1; mv {page_file}.tmp {page_file}) &\n'
    )
    browser.chmod(0o700)
    with episodic_ui(env={"BROWSER": str(browser)}) as (process, printed):
        argv = wait_for(argv_file, process)
        status, has_page, file_left, file_mode, folder_mode, action, key = wait_for(
            page_file, process
        ).split()
        assert (status, has_page, file_left) == ("200", "True", "False")  # opened; the page is gone
        assert (file_mode, folder_mode) == ("0o600", "0o700")  # no other user could read it
        assert argv.startswith("file://") and "key" not in argv and key not in argv  # a path, no secret
        again = f"key={key}".encode()
        status_again, headers, _ = request(action, "POST", {**FORM, "Content-Length": str(len(again))}, again)
        assert status_again == 403 and "set-cookie" not in headers  # the key worked once
        shown = re.search(r"http://[0-9a-f]{32}\.localhost:\d+/\?key=\S+", printed)
        assert shown, printed  # the terminal's own one-time URL still opens
        browser_two = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser_two.open(shown.group(0), timeout=30) as page:
            assert page.status == 200


def test_ui_token_on_the_command_line_is_refused(episodic_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from episodic.cli import main; main()", "ui", "--no-open", "--token", "T"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "EPISODIC_TOKEN" in done.stderr and "--token-file" in done.stderr


def remote_search(printed: str) -> str:
    """The search page of a remote viewer, through its printed one-time URL."""
    opening = re.search(r"(http://[0-9a-f]{32}\.localhost:\d+/)\?key=\S+", printed)
    assert opening, printed
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    browser.open(opening.group(0), timeout=30).read()
    query = quote("checkout page shows a blank total with a discounted item")
    with browser.open(f"{opening.group(1)}?query={query}", timeout=60) as page:
        return page.read().decode()


@pytest.mark.parametrize("how", ["file", "stdin", "env"])
def test_the_endpoint_token_comes_from_a_file_stdin_or_the_environment(
    world: World, tmp_path: Path, how: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(world.token + "\n")
    token_file.chmod(0o600)
    args = ["--no-open", "--endpoint", world.mcp_url]
    env: dict[str, str] = {}
    if how == "file":
        args += ["--token-file", str(token_file)]
    elif how == "stdin":
        args += ["--token-file", "-"]
    else:
        env["EPISODIC_TOKEN"] = world.token
    with token_file.open() as stdin, episodic_ui(*args, env=env, stdin=stdin) as (_, printed):
        assert SESSIONS[0][0] in remote_search(printed)


def test_a_session_id_that_needs_percent_encoding_opens(world: World) -> None:
    odd = "weird id+1/é%"
    path = write_session(world.projects, "weird-file", *SESSIONS[0][1:])
    path.write_text(
        path.read_text(encoding="utf-8").replace('"weird-file"', json.dumps(odd)), encoding="utf-8"
    )
    report = index_sessions(world.memory, [str(path)], world.settings.tenant)
    assert report.indexed == 1, report.as_dict()
    assert world.memory.store.get(world.settings.tenant, odd) is not None
    target = f"{world.ui.base}/episode/{quote(odd, safe='')}"
    status, _, body = request(target, headers=cookie(world))
    assert status == 200 and "weird id+1/é%" in body.decode(), status
    form = f"action=approve&csrf={world.ui.guard.csrf_token}".encode()
    headers = {**cookie(world), **FORM, "Origin": world.ui.base, "Content-Length": str(len(form))}
    status, headers_back, _ = request(target, "POST", headers, form)
    assert status == 303 and headers_back["location"].startswith(f"/episode/{quote(odd, safe='')}")
    stored = world.memory.store.get(world.settings.tenant, odd)
    assert stored is not None and stored.review_state.value == "approved"
