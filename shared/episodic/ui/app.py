"""The viewer assembled from settings: the local index (or a deployed endpoint), the eval and dream folders,
served on loopback until interrupted."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import webbrowser
from collections.abc import Callable, Iterator
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


def open_browser_on(target: str, on_failure: Callable[[], None] | None = None) -> threading.Thread:
    """The browser started beside the server, never in its way: a console browser (`BROWSER=w3m`) runs
    in the foreground until it exits, and must be answered meanwhile. `on_failure` runs when none opened."""

    def run() -> None:
        try:
            opened = webbrowser.open(target)
        except Exception:  # webbrowser.Error, or a browser command that cannot start
            opened = False
        if not opened and on_failure is not None:
            on_failure()

    thread = threading.Thread(target=run, name="episodic-ui-browser", daemon=True)
    thread.start()
    return thread


NO_BROWSER = "no browser could be opened here"
NOT_OPENED = "no browser has opened the viewer yet (one that cannot resolve <name>.localhost never will)"


def no_browser_hint(what_happened: str, guard_port: int) -> str:
    """What to do when no browser opened the viewer: the printed URL works in Firefox, Chromium or curl,
    here or, through an SSH tunnel on the same port, on the user's own machine; a resolver-bound browser
    needs --host."""
    return (
        f"episodic ui: {what_happened}. Open the URL above in Firefox or Chromium (they reach "
        "<name>.localhost themselves; curl does too). From another machine: "
        f"`ssh -L {guard_port}:127.0.0.1:{guard_port} THIS_HOST`, then open the URL in your own Firefox or "
        "Chromium. A browser that asks the system resolver (w3m, lynx, wget, Python) cannot reach the name: "
        "run `episodic ui --host 127.0.0.1` for it (weaker: every other local server on 127.0.0.1 receives "
        "its cookie)."
    )


@contextlib.contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (a service manager, `kill`) ends the server as Ctrl-C does, so its temp folder is removed;
    only the main thread may install a handler (a test's background viewer does not)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_ui(
    settings: Settings,
    *,
    host: str | None = None,
    port: int = 0,
    open_browser: bool = True,
    on_ready: Callable[[str], None] | None = None,
    on_no_browser: Callable[[str], None] | None = None,
    **options: object,
) -> None:
    """Serve until Ctrl-C or SIGTERM; prints (via on_ready) a one-time opening URL for the user's own
    terminal, and hands the browser a page only this user can read (see `ui.security`), once the server
    listens; `on_no_browser` gets a working way in when no browser could be opened."""
    viewer = build_viewer(settings, **options)  # type: ignore[arg-type]
    httpd, guard = make_ui_server(viewer, host, port)
    folder = opening_folder() if open_browser else None
    try:
        with stopped_by_sigterm():
            if on_ready:
                on_ready(guard.opening_url())
            if folder is not None:

                def say(what_happened: str) -> None:
                    if on_no_browser is not None:
                        on_no_browser(no_browser_hint(what_happened, guard.port))

                # a browser started but never posted the page (w3m, lynx: no `*.localhost`): said at expiry
                opening = guard.opening_file(folder, on_unused=lambda: say(NOT_OPENED))

                def no_browser() -> None:
                    guard.withdraw(opening)  # its key and file go now: nothing will post it
                    say(NO_BROWSER)

                open_browser_on(opening.as_uri(), no_browser)
            httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        guard.forget_all()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
