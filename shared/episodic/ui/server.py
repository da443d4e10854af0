"""`episodic ui`: a threaded stdlib HTTP server on loopback; every request passes `security.Guard` first,
then one `views.Viewer` method renders it (the same plumbing as `mcp.http_server`, no framework)."""

from __future__ import annotations

import errno
import logging
import socket
import threading
from urllib.parse import parse_qs, urlsplit

from episodic.kernel.errors import InvalidArgumentError
from episodic.plumbing.http_clients import (
    STOP_POLL_SECONDS,
    BoundedHandler,
    BoundedServer,
    ClientLimits,
    request_head,
)
from episodic.ui.security import (
    KEY_PARAM,
    OPEN_PATH,
    SECURITY_HEADERS,
    WRONG_HOST_STATUS,
    WRONG_HOST_TEXT,
    Guard,
    Refused,
    WrongHost,
)
from episodic.ui.views import FAVICON_PATH, Response, Viewer

log = logging.getLogger(__name__)
MAX_FORM_BYTES = 256 * 1024  # a whole edited card is a few KB
# the cookie is set by a page the browser reached from a file: a redirect from there would not carry a
# SameSite=Strict cookie, a refresh from this page (this origin) does
SIGNED_IN_PAGE = (
    b'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">'
    b'<title>episodic</title><p><a href="/">Open the viewer</a></p>'
)


def _content_length(header: str | None) -> int:
    """The form's length: 400 for anything but digits, 413 over the cap."""
    text = "0" if header is None else header.strip()  # absent: no body; present but blank: bad
    if not text.isascii() or not text.isdigit():
        raise Refused(400, f"bad Content-Length {header!r}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(MAX_FORM_BYTES)) or int(digits) > MAX_FORM_BYTES:  # never int() of 5,000 digits
        raise Refused(413, "form too large")
    return int(digits)


def _first(values: dict[str, list[str]]) -> dict[str, str]:
    return {name: items[0] for name, items in values.items() if items}


class _Handler(BoundedHandler):
    server_version = "episodic-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    viewer: Viewer
    guard: Guard
    timeout = 15.0

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        headers = {**SECURITY_HEADERS, "Content-Type": response.content_type, **response.headers}
        if self.close_connection:
            headers["Connection"] = "close"
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _form(self) -> dict[str, str] | None:
        """The POSTed form (None: its deadline passed and the connection is closed)."""
        length = _content_length(self.headers.get("Content-Length"))
        raw = self.read_body(length)
        if raw is None:
            return None
        return _first(parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True))

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        if self.command != "POST" and self.read_body(0) is None:  # its deadline passed: answer nothing
            return
        query = _first(parse_qs(parts.query, keep_blank_values=True))
        signed_in = False
        try:
            self.guard.check_host(self.headers.get("Host"))
            key = query.pop(KEY_PARAM, None)
            # the stylesheet, script and icon hold no data: served without the secret, so a refusal is styled
            public = self.command in ("GET", "HEAD") and (
                parts.path.startswith("/static/") or parts.path == FAVICON_PATH
            )
            signed_in = self.guard.has_secret(self.headers)
            if parts.path == OPEN_PATH and self.command == "POST":  # the opening file's form: key -> cookie
                opening = self._form()
                if opening is None:
                    return
                signed_in = self.guard.redeem(opening.get(KEY_PARAM, ""))
                if not signed_in:
                    raise Refused(
                        403, "this opening page was already used or has expired: run `episodic ui` again"
                    )
                self.settle(True)
                self._send(Response(200, SIGNED_IN_PAGE, headers={"Set-Cookie": self.guard.cookie_header()}))
                return
            if key is not None:  # an opening URL: its one-time key becomes the cookie, out of the address bar
                if not self.guard.redeem(key) and not signed_in:
                    raise Refused(
                        403, "this opening link was already used or has expired: run `episodic ui` again"
                    )
                signed_in = True
                self.settle(True)
                local = "/" + parts.path.lstrip("/")  # never `//host`: a redirect stays on this server
                self._send(Response.redirect(local, {"Set-Cookie": self.guard.cookie_header()}))
                return
            if not signed_in and not public:
                raise Refused(403, "this viewer needs the per-run secret: open the URL `episodic ui` printed")
            self.settle(signed_in)  # without the cookie: this answer, then the connection closes
            form: dict[str, str] = {}
            if self.command == "POST":
                read = self._form()
                if read is None:  # the whole-request deadline passed: the connection is already closed
                    return
                form = read
                self.guard.check_post(self.headers, form.pop("csrf", ""))
            response = self.viewer.route(self.command, parts.path, query, form)
        except WrongHost:  # not the page (its header names the source): the fixed text, nothing else
            self.settle(False)
            response = Response(WRONG_HOST_STATUS, WRONG_HOST_TEXT.encode(), "text/plain; charset=utf-8")
        except Refused as refused:
            self.settle(signed_in)
            response = self.viewer.refused(refused.status, refused.reason)
        except Exception:
            log.exception("viewer error on %s", parts.path)
            response = self.viewer.refused(500, "internal error (see the server's log)")
        self._send(response)

    do_GET = do_HEAD = do_POST = _handle

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class UiServer(BoundedServer):
    """Clients bounded like `episodic serve`'s (`episodic.plumbing.http_clients`)."""

    ipv6_twin: socket.socket | None = None  # the same port held on ::1 (`_hold_ipv6_twin`)

    def server_close(self) -> None:
        super().server_close()
        if self.ipv6_twin is not None:
            self.ipv6_twin.close()


def _hold_ipv6_twin(port: int) -> socket.socket | None:
    """The same port on ::1, bound and never listening: `<name>.localhost` also resolves to ::1, and no
    other process may answer there (a browser trying ::1 first is refused, then uses 127.0.0.1).
    None where this machine has no IPv6 loopback (then nobody can bind it either); OSError when taken."""
    if not socket.has_ipv6:
        return None
    twin = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        twin.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        twin.bind(("::1", port))
    except OSError as exc:
        twin.close()
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            return None
        raise
    return twin


def make_ui_server(
    viewer: Viewer, host: str | None = None, port: int = 0, limits: ClientLimits | None = None
) -> tuple[UiServer, Guard]:
    """Bind on loopback (host None: 127.0.0.1 with the same port held on ::1, reached by this run's own
    `<random>.localhost` name; port 0: any free port); the guard knows the name, the port and the secrets."""
    if host is not None and host not in ("127.0.0.1", "::1", "localhost") and not _loopback_v4(host):
        raise InvalidArgumentError(  # a wrong option, not a refused request: one line, as every CLI error
            f"the viewer binds loopback only, not {host!r}: omit --host (a per-run <random>.localhost name of its "
            "own) or give 127.0.0.1"
        )
    guard = Guard()
    handler = type("UiHandler", (_Handler,), {"viewer": viewer, "guard": guard})
    limits = limits or ClientLimits(vouch=lambda head: guard.has_secret({"Cookie": _cookie(head)}))
    for attempt in range(5):
        httpd = UiServer((host or "127.0.0.1", port), handler, limits=limits)
        if host is not None:
            guard.name = str(httpd.server_address[0])  # the address itself: no name of its own
            break
        try:
            httpd.ipv6_twin = _hold_ipv6_twin(int(httpd.server_address[1]))
            break
        except OSError:  # ::1 holds that port already: another port (a given one cannot be moved)
            httpd.server_close()
            if port or attempt == 4:
                raise
    guard.host = str(httpd.server_address[0])
    guard.port = int(httpd.server_address[1])
    viewer.csrf_token = guard.csrf_token
    return httpd, guard


def _cookie(head: bytes) -> str:
    return request_head(head).get("cookie", "")


def _loopback_v4(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and int(p) < 256 for p in parts)


class BackgroundUi:
    """Serve in a thread (tests): `with BackgroundUi(viewer) as ui: ui.url`."""

    def __init__(self, viewer: Viewer, limits: ClientLimits | None = None) -> None:
        self.httpd, self.guard = make_ui_server(viewer, limits=limits)
        # shutdown() waits for the serve loop's next poll: a short poll ends a test's viewer at once
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(STOP_POLL_SECONDS,), name="episodic-ui", daemon=True
        )

    @property
    def url(self) -> str:
        return self.guard.opening_url()

    @property
    def base(self) -> str:
        return self.guard.base

    def __enter__(self) -> BackgroundUi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
