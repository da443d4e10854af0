"""Headless Firefox for the viewer tests: Debian's `firefox-esr`, driven over Marionette, the automation
protocol built into every Firefox (length-prefixed JSON on a loopback port). Playwright's own Firefox build
cannot be downloaded here and geckodriver is not packaged; the protocol's few commands are all a test needs.
Skips when Firefox is absent, except under CI, where it fails (CI installs it beside chromium)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIREFOX = os.environ.get("EPISODIC_TEST_FIREFOX") or shutil.which("firefox-esr") or "/usr/bin/firefox-esr"
START_SECONDS = 120.0  # an upper bound for a cold start on a loaded machine, never a measure of speed
# a quiet profile: no first-run pages, updates, telemetry or remote settings (no network in tests)
PREFS = {
    "marionette.port": 0,  # any free port, written to <profile>/MarionetteActivePort
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "startup.homepage_welcome_url": "about:blank",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "app.normandy.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "extensions.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "services.settings.server": "http://127.0.0.1:9/",
    "remote.prefs.recommended": True,
}


def require_firefox() -> None:
    if not Path(FIREFOX).is_file():
        message = f"firefox unavailable ({FIREFOX}; apt-get install firefox-esr)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


class MarionetteError(AssertionError):
    """A command Firefox refused (its WebDriver error and message)."""


class Firefox:
    """One Marionette session: navigate, find, type, click, read."""

    def __init__(self, port: int) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=START_SECONDS)
        self._buffer = b""
        self._next_id = 0
        hello = self._receive()
        assert hello.get("marionetteProtocol") == 3, hello
        self.command(
            "WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": False}}}
        )

    def _receive(self) -> Any:
        while b":" not in self._buffer:
            self._read()
        length, _, rest = self._buffer.partition(b":")
        size = int(length)
        self._buffer = rest
        while len(self._buffer) < size:
            self._read()
        message, self._buffer = self._buffer[:size], self._buffer[size:]
        return json.loads(message)

    def _read(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise MarionetteError("firefox closed the connection")
        self._buffer += chunk

    def command(self, name: str, params: dict[str, Any] | None = None) -> Any:
        self._next_id += 1
        data = json.dumps([0, self._next_id, name, params or {}]).encode()
        self._sock.sendall(str(len(data)).encode() + b":" + data)
        while True:
            kind, message_id, error, result = self._receive()
            if kind == 1 and message_id == self._next_id:
                break
        if error:
            raise MarionetteError(f"{name}: {error}")
        return result.get("value") if isinstance(result, dict) and "value" in result else result

    def goto(self, url: str) -> None:
        self.command("WebDriver:Navigate", {"url": url})

    @property
    def url(self) -> str:
        return str(self.command("WebDriver:GetCurrentURL"))

    def find(self, css: str) -> str:
        element = self.command("WebDriver:FindElement", {"using": "css selector", "value": css})
        return str(next(iter(element.values())))  # the element's reference

    def type(self, css: str, text: str) -> None:
        self.command("WebDriver:ElementSendKeys", {"id": self.find(css), "text": text})

    def click(self, css: str) -> None:
        self.command("WebDriver:ElementClick", {"id": self.find(css)})

    def text(self, css: str = "body") -> str:
        return str(self.command("WebDriver:GetElementText", {"id": self.find(css)}))

    def script(self, source: str) -> Any:
        return self.command("WebDriver:ExecuteScript", {"script": source, "args": []})

    def close(self) -> None:
        with contextlib.suppress(MarionetteError, OSError):
            self.command("Marionette:Quit", {"flags": ["eForceQuit"]})
        self._sock.close()


def _active_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    marker = profile / "MarionetteActivePort"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if marker.is_file() and marker.read_text().strip().isdigit():
            return int(marker.read_text().strip())
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise MarionetteError(f"firefox did not open Marionette (exit {process.poll()})")


@pytest.fixture()
def firefox() -> Iterator[Firefox]:
    """A fresh headless Firefox with its own throwaway profile (no cookie survives a test)."""
    require_firefox()
    with tempfile.TemporaryDirectory(prefix="episodic-firefox-") as folder:
        profile = Path(folder)
        (profile / "user.js").write_text(
            "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in PREFS.items())
        )
        env = {**os.environ, "MOZ_HEADLESS": "1", "HOME": folder}
        process = subprocess.Popen(
            [FIREFOX, "--headless", "--marionette", "--no-remote", "--profile", str(profile), "about:blank"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        browser = None
        try:
            browser = Firefox(_active_port(profile, process))
            yield browser
        finally:
            if browser is not None:
                browser.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
