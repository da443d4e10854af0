"""`episodic ui`: a threaded stdlib HTTP server on loopback; every request passes `security.Guard` first,
then one `views.Viewer` method renders it (the same plumbing as `mcp.http_server`, no framework)."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from episodic.ui.security import KEY_PARAM, SECURITY_HEADERS, Guard, Refused
from episodic.ui.views import Response, Viewer

log = logging.getLogger(__name__)
MAX_FORM_BYTES = 256 * 1024  # a whole edited card is a few KB


def _first(values: dict[str, list[str]]) -> dict[str, str]:
    return {name: items[0] for name, items in values.items() if items}


class _Handler(BaseHTTPRequestHandler):
    server_version = "episodic-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    viewer: Viewer
    guard: Guard
    timeout = 15.0

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        headers = {**SECURITY_HEADERS, "Content-Type": response.content_type, **response.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = _first(parse_qs(parts.query, keep_blank_values=True))
        try:
            self.guard.check_host(self.headers.get("Host"))
            key = query.pop(KEY_PARAM, None)
            public = parts.path.startswith("/static/") and self.command in ("GET", "HEAD")
            # the stylesheet and script hold no data: served without the secret, so a refusal is styled
            if not public and not self.guard.has_secret(self.headers, key):
                raise Refused(403, "this viewer needs the per-run secret: open the URL `episodic ui` printed")
            if key is not None:  # the opening URL: keep the secret in a cookie, out of the address bar
                local = "/" + parts.path.lstrip("/")  # never `//host`: a redirect stays on this server
                self._send(Response.redirect(local, {"Set-Cookie": self.guard.cookie_header()}))
                return
            form: dict[str, str] = {}
            if self.command == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_FORM_BYTES:
                    raise Refused(413, "form too large")
                body = self.rfile.read(length).decode("utf-8", "replace")
                form = _first(parse_qs(body, keep_blank_values=True))
                self.guard.check_post(self.headers, form.pop("csrf", ""))
            response = self.viewer.route(self.command, parts.path, query, form)
        except Refused as refused:
            response = self.viewer.refused(refused.status, refused.reason)
        except Exception:
            log.exception("viewer error on %s", parts.path)
            response = self.viewer.refused(500, "internal error (see the server's log)")
        self._send(response)

    do_GET = do_HEAD = do_POST = _handle

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class UiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_ui_server(viewer: Viewer, host: str = "127.0.0.1", port: int = 0) -> tuple[UiServer, Guard]:
    """Bind on loopback (port 0: any free port); the guard knows its port and this run's secret."""
    if host not in ("127.0.0.1", "::1", "localhost"):
        raise Refused(400, f"the viewer binds loopback only, not {host!r}")
    guard = Guard()
    handler = type("UiHandler", (_Handler,), {"viewer": viewer, "guard": guard})
    httpd = UiServer((host, port), handler)
    guard.port = int(httpd.server_address[1])
    viewer.csrf_token = guard.csrf_token
    return httpd, guard


class BackgroundUi:
    """Serve in a thread (tests): `with BackgroundUi(viewer) as ui: ui.url`."""

    def __init__(self, viewer: Viewer) -> None:
        self.httpd, self.guard = make_ui_server(viewer)
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="episodic-ui", daemon=True)

    @property
    def url(self) -> str:
        return self.guard.opening_url()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.guard.port}"

    def __enter__(self) -> BackgroundUi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
