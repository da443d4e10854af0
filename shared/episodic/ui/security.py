"""Who may drive the viewer: the browser holding this run's secret, on this machine's loopback.

- loopback only: the server binds 127.0.0.1 (or ::1) and answers only Host headers naming it (a DNS
  rebinding page's Host is its own name);
- a per-run secret (random, 256 bits) lives only in an HttpOnly, SameSite=Strict cookie; every request
  without it (another local user's browser, a script guessing the port) gets 403. An opening URL holds a
  one-time key instead, exchanged for the cookie on first use and invalid from then on: the browser's
  command line (readable by every local user in /proc) holds nothing that still opens the viewer;
- every POST also needs the CSRF token (derived from the secret) in the form, and an Origin (or, without
  one, a Referer) of this server: a web page elsewhere can neither read the token nor send the cookie;
- responses forbid framing and any network asset (Content-Security-Policy: 'self' only).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Protocol
from urllib.parse import urlsplit

COOKIE = "episodic_ui"
KEY_PARAM = "key"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
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


@dataclass
class Guard:
    """This run's secret and the origins it answers to (set once the port is known)."""

    port: int = 0
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # the cookie's: never in a URL
    _opening_keys: set[str] = field(default_factory=set)  # one-time keys of opening URLs not yet used
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def csrf_token(self) -> str:
        return hmac.new(self.secret.encode(), b"csrf", hashlib.sha256).hexdigest()

    def origins(self) -> set[str]:
        return {f"http://{host}:{self.port}" for host in ("127.0.0.1", "localhost", "[::1]")}

    def opening_url(self, host: str = "127.0.0.1") -> str:
        """A URL that opens the viewer once: its fresh key is exchanged for the cookie, then invalid."""
        key = secrets.token_urlsafe(32)
        with self._lock:
            self._opening_keys.add(key)
        return f"http://{host}:{self.port}/?{KEY_PARAM}={key}"

    def redeem(self, key: str) -> bool:
        """True once for the key of an opening URL; that key is invalid from then on."""
        with self._lock:
            for known in self._opening_keys:
                if hmac.compare_digest(known.encode(), key.encode()):
                    self._opening_keys.discard(known)
                    return True
        return False

    def cookie_header(self) -> str:
        return f"{COOKIE}={self.secret}; HttpOnly; SameSite=Strict; Path=/"

    def check_host(self, host_header: str | None) -> None:
        host = (urlsplit(f"//{host_header or ''}").hostname or "").lower()
        if host not in LOOPBACK:
            raise Refused(421, f"this viewer answers only on loopback, not for host {host_header!r}")

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
