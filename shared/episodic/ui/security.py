"""Who may drive the viewer: the browser holding this run's secret, at this run's own host name.

- a host name of its own, unguessable: the viewer is reached at `http://<32 hex digits>.localhost:<port>`
  (browsers resolve every `*.localhost` name to loopback themselves, never through DNS) and answers only
  Host headers naming exactly that name and port (a DNS rebinding page's Host is its own name); any other
  Host gets one fixed bare 421 that never names it (`WRONG_HOST_TEXT`). Cookies are
  scoped by host, not port: a cookie of an address (127.0.0.1, or the random 127.x.y.z of earlier releases,
  visible to every local user in /proc/net/tcp) reached any other server another local user binds on that
  address; one of this name reaches only a server the browser reaches by this name, and no other local user
  learns the name (it is never on a command line or in a socket table). The server listens on 127.0.0.1 and
  holds the same port on ::1 (bound, never listening), so no other process can answer the name there;
- a per-run secret (random, 256 bits) lives only in an HttpOnly, SameSite=Strict cookie; every request
  without it (another local user's browser, a script guessing the port) gets 403;
- the browser is handed no secret on its command line (every local user reads /proc/*/cmdline): it
  opens a file only the user can read (0600, in a 0700 folder) whose form posts a one-time key to
  `/open`; the key expires `BROWSER_KEY_SECONDS` after it is made and the file is deleted once it is used
  (or expires). The URL printed on the user's own terminal holds a one-time key that expires later;
- every POST also needs the CSRF token (random, independent of the cookie: a stolen cookie does not give
  it) in the form, and an Origin (or, without one, a Referer) of this server;
- responses forbid framing and any network asset (Content-Security-Policy: 'self' only).
- `episodic ui --host ADDRESS` serves at that address instead (no name of its own: weaker, as above).
"""

from __future__ import annotations

import contextlib
import hmac
import html
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

COOKIE = "episodic_ui"
KEY_PARAM = "key"
OPEN_PATH = "/open"
BROWSER_KEY_SECONDS = 20.0  # the browser posts it within a second or two of starting
PRINTED_KEY_SECONDS = 600.0  # the user copies the printed URL from their own terminal
OPENING_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Opening the episodic viewer</title></head>
<body><form id="open" method="post" action="{action}">
<input type="hidden" name="{param}" value="{key}">
<p>Opening the episodic viewer… <button type="submit">Open it</button> (this page works once, for a few
seconds: if it is refused, run <code>episodic ui</code> again)</p></form>
<script>document.getElementById("open").submit()</script></body></html>
"""
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class Headers(Protocol):
    def get(self, name: str, /) -> str | None: ...


class Refused(Exception):
    """A request the viewer will not serve: (HTTP status, the reason shown)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# one fixed answer for every Host that is not this run's name and port: whoever asks without the name
# learns nothing of it (a refusal that named it handed it to any local user who read the port)
WRONG_HOST_STATUS = 421
WRONG_HOST_TEXT = "Misdirected request: this server does not answer for that host.\n"


class WrongHost(Refused):
    """A Host header that is not this run's name and port: answered by `WRONG_HOST_TEXT` alone."""

    def __init__(self) -> None:
        super().__init__(WRONG_HOST_STATUS, WRONG_HOST_TEXT.strip())


@dataclass
class _Key:
    expires: float
    file: Path | None = None  # the opening file that holds it: deleted once it is used or expired
    on_unused: Callable[[], None] | None = None  # told when it expires unused (no browser posted it)


@dataclass
class Guard:
    """This run's secret and the origins it answers to (set once the address and port are known)."""

    port: int = 0
    host: str = "127.0.0.1"  # where it listens
    name: str = field(default_factory=lambda: f"{secrets.token_hex(16)}.localhost")  # what browsers ask for
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # the cookie's: never in a URL
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # not derived from it
    clock: Callable[[], float] = time.monotonic  # a builtin: not bound as a method
    _opening_keys: dict[str, _Key] = field(default_factory=dict)  # one-time keys not used yet
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _now(self) -> float:
        return self.clock()

    @property
    def base(self) -> str:
        name = f"[{self.name}]" if ":" in self.name else self.name
        return f"http://{name}:{self.port}"

    def origins(self) -> set[str]:
        return {self.base}

    def _new_key(
        self, seconds: float, file: Path | None = None, on_unused: Callable[[], None] | None = None
    ) -> str:
        key = secrets.token_urlsafe(32)
        with self._lock:
            unused = self._forget_expired()
            self._opening_keys[key] = _Key(self._now() + seconds, file, on_unused)
        _tell(unused)
        return key

    def opening_url(self, seconds: float = PRINTED_KEY_SECONDS) -> str:
        """A URL that opens the viewer once, within `seconds`: its key is exchanged for the cookie."""
        return f"{self.base}/?{KEY_PARAM}={self._new_key(seconds)}"

    def opening_file(
        self,
        folder: Path,
        seconds: float = BROWSER_KEY_SECONDS,
        on_unused: Callable[[], None] | None = None,
    ) -> Path:
        """A page only this user can read that posts a one-time key to this server: what the browser is
        handed (its path on the browser's command line reveals nothing). `on_unused` runs if the key
        expires before any browser posts it."""
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
        path = folder / f"open-{secrets.token_hex(8)}.html"
        key = self._new_key(seconds, path, on_unused)
        page = OPENING_PAGE.format(
            action=html.escape(self.base + OPEN_PATH), param=KEY_PARAM, key=html.escape(key)
        )
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(page)
        timer = threading.Timer(seconds, self.forget_expired)  # the file goes when its key expires
        timer.daemon = True
        timer.start()
        return path

    def redeem(self, key: str) -> bool:
        """True once for an unexpired key of an opening URL or file; that key is invalid from then on."""
        found = False
        with self._lock:
            unused = self._forget_expired()
            for known in list(self._opening_keys):
                if hmac.compare_digest(known.encode(), key.encode()):
                    _delete(self._opening_keys.pop(known).file)
                    found = True
                    break
        _tell(unused)
        return found

    def withdraw(self, file: Path) -> None:
        """The opening file's key is void and the file deleted (no browser opened to post it)."""
        with self._lock:
            for key, entry in list(self._opening_keys.items()):
                if entry.file == file:
                    _delete(self._opening_keys.pop(key).file)

    def forget_expired(self) -> None:
        with self._lock:
            unused = self._forget_expired()
        _tell(unused)

    def _forget_expired(self) -> list[Callable[[], None]]:
        """Drops expired keys (and their files); returns who to tell, told once the lock is released."""
        now = self._now()
        unused = []
        for key, entry in list(self._opening_keys.items()):
            if entry.expires <= now:
                _delete(self._opening_keys.pop(key).file)
                unused += [entry.on_unused] if entry.on_unused is not None else []
        return unused

    def forget_all(self) -> None:
        """At exit: every opening file goes."""
        with self._lock:
            for entry in self._opening_keys.values():
                _delete(entry.file)
            self._opening_keys.clear()

    def cookie_header(self) -> str:
        return f"{COOKIE}={self.secret}; HttpOnly; SameSite=Strict; Path=/"

    def check_host(self, host_header: str | None) -> None:
        try:
            parts = urlsplit(f"//{host_header or ''}")
            port = parts.port
        except ValueError:
            port = None
            parts = urlsplit("//")
        if (parts.hostname or "").lower() != self.name.lower() or port != self.port:
            raise WrongHost

    def has_secret(self, headers: Headers) -> bool:
        """The request's cookie holds this run's secret."""
        raw = headers.get("Cookie") or ""
        try:
            jar = SimpleCookie(raw)
        except CookieError:
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.secret.encode())

    def check_post(self, headers: Headers, form_token: str) -> None:
        """A state-changing request: same origin, and the form carries the CSRF token."""
        origin = headers.get("Origin")
        if origin is None:
            referer = headers.get("Referer") or ""
            parts = urlsplit(referer)
            origin = f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
        if origin not in self.origins():
            raise Refused(403, f"cross-origin request refused (origin {origin!r})")
        if not hmac.compare_digest(form_token.encode(), self.csrf_token.encode()):
            raise Refused(403, "the form's CSRF token is missing or wrong: reload the page")


def _tell(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        callback()


def _delete(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()
