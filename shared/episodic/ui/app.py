"""The viewer assembled from settings: the local index (or a deployed endpoint), the eval and dream folders,
served on loopback until interrupted."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from episodic.dream.archive import local_archive
from episodic.kernel.settings import Settings
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


def opening_folder() -> Path:
    """A fresh folder only this user can enter (0700), for the page that hands the browser its key."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")  # per-user, 0700, in memory, where it exists
    parent = runtime if runtime and Path(runtime).is_dir() else None
    return Path(tempfile.mkdtemp(prefix="episodic-ui-", dir=parent))


def open_browser_on(target: str) -> threading.Thread:
    """The browser started beside the server, never in its way: a console browser (`BROWSER=w3m`) runs
    in the foreground until it exits, and must be answered meanwhile."""
    thread = threading.Thread(target=webbrowser.open, args=(target,), name="episodic-ui-browser", daemon=True)
    thread.start()
    return thread


def serve_ui(
    settings: Settings,
    *,
    host: str | None = None,
    port: int = 0,
    open_browser: bool = True,
    on_ready: Callable[[str], None] | None = None,
    **options: object,
) -> None:
    """Serve until Ctrl-C; prints (via on_ready) a one-time opening URL for the user's own terminal, and
    hands the browser a page only this user can read (see `ui.security`), once the server listens."""
    viewer = build_viewer(settings, **options)  # type: ignore[arg-type]
    httpd, guard = make_ui_server(viewer, host, port)
    folder = opening_folder() if open_browser else None
    try:
        if on_ready:
            on_ready(guard.opening_url())
        if folder is not None:
            open_browser_on(guard.opening_file(folder).as_uri())
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        guard.forget_all()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
