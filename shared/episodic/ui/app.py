"""The viewer assembled from settings: the local index (or a deployed endpoint), the eval and dream folders,
served on loopback until interrupted."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from pathlib import Path

from episodic.dream.archive import local_archive
from episodic.settings import Settings
from episodic.ui.data import LocalSource, ViewerSource
from episodic.ui.server import make_ui_server
from episodic.ui.views import Viewer

EVAL_FOLDER = "eval-report"


def build_viewer(
    settings: Settings,
    *,
    tenant: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
    eval_dir: Path | None = None,
    dream_dir: Path | None = None,
    source: ViewerSource | None = None,
) -> Viewer:
    if source is None:
        if endpoint:
            from episodic.ui.remote import RemoteSource

            source = RemoteSource(endpoint, token or settings.token or "")
        else:
            from episodic.assembly import build_memory

            source = LocalSource(build_memory(settings))
    tenant = tenant or settings.tenant
    return Viewer(
        source,
        tenant,
        eval_dir=eval_dir or settings.home / EVAL_FOLDER,
        dream_dir=dream_dir or local_archive(settings.home).folder(tenant),  # where `episodic dream` writes
    )


def serve_ui(
    settings: Settings,
    *,
    port: int = 0,
    open_browser: bool = True,
    on_ready: Callable[[str], None] | None = None,
    **options: object,
) -> None:
    """Serve until Ctrl-C; prints (via on_ready) a one-time opening URL, and opens the browser on another:
    the browser's command line is readable by every local user, but its key works once, and is used."""
    viewer = build_viewer(settings, **options)  # type: ignore[arg-type]
    httpd, guard = make_ui_server(viewer, "127.0.0.1", port)
    if on_ready:
        on_ready(guard.opening_url())
    if open_browser:
        webbrowser.open(guard.opening_url())
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
