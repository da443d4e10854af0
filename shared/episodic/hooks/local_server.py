"""The local `episodic serve` as setup, doctor and `serve` see it: the pid the autostart recorded, a start
the same way the prompt hook starts one, and a wait until a search is answered (the model loaded).

`setup claude-code --write` leaves the server answering, so the first prompt after setup is served
instead of failing open while a cold server loads.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from episodic.kernel.settings import Settings
from episodic.plumbing import autostart, envsource

READY_WAIT_SECONDS = 90.0  # a cold start loads the embedder's weights; a busy machine takes longer
PROBE_QUERY = "episodic setup probe: is the local server answering"


@dataclass(frozen=True)
class ServerState:
    url: str
    status: str  # answering | starting | refused | foreign | off
    pid: int | None = None
    detail: str = ""
    moved: str = ""  # why and where the server moved (another program held the configured port)

    def describe(self) -> str:
        pid = f" (pid {self.pid})" if self.pid else ""
        said = {
            "answering": f"answering at {self.url}{pid}",
            "starting": f"still starting at {self.url}{pid}: {self.detail}",
            "refused": f"answers at {self.url}{pid} but refused the hook's search: {self.detail}",
            "foreign": self.detail,
            "off": self.detail,
        }[self.status]
        return f"{self.moved}; {said}" if self.moved else said


def recorded_pid(home: Path) -> int | None:
    """The pid in serve.pid when that process is alive (the server the hook or setup started)."""
    try:
        pid = int((home / autostart.PID_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        return pid
    return pid


def _ask(url: str, token: str, timeout: float) -> None:
    """One search through the hook's own client; raises hook.ServerDown / hook.HookSkip."""
    from episodic.hooks import prompt as hook

    hook.ask_server(url, token, PROBE_QUERY, timeout)


def ensure_answering(
    settings: Settings,
    token: str,
    wait_seconds: float = READY_WAIT_SECONDS,
    ask: Callable[[str, str, float], None] = _ask,
    on_start: Callable[[], None] | None = None,
) -> ServerState:
    """Start the local server like the hook does (unless one answers, or hook_autostart is off) and wait
    until it answers a search, at most `wait_seconds`."""
    from episodic.hooks import prompt as hook

    url = settings.endpoint_url
    parts = urlsplit(url)
    deadline = time.monotonic() + wait_seconds
    started, moved = False, ""
    while True:
        remaining = deadline - time.monotonic()
        try:
            ask(url, token, max(min(remaining, 30.0), 1.0))
            return ServerState(url, "answering", recorded_pid(settings.home), moved=moved)
        except hook.ServerDown:
            if not settings.hook_autostart:
                detail = f"nothing answers at {url} and hook_autostart is off: run `episodic serve`"
                return ServerState(url, "off", detail=detail)
            if not started:
                autostart.start_local_server(settings.home, parts.hostname or "", parts.port or 80)
                started = True
                if on_start:
                    on_start()
        except hook.ForeignServer as foreign:
            said = str(foreign).removeprefix("fail: ")
            pinned = _pinned(settings)
            if pinned or moved:
                fix = f"set another free port ({pinned}) or stop that program" if pinned else "stop it"
                return ServerState(url, "foreign", detail=f"{said}; {fix}")
            config = envsource.config_path()
            port = autostart.move_to_free_port(settings.home, config, parts.hostname or "")
            if port is None:  # a prompt's hook is moving it this moment: the port it saved, once saved
                time.sleep(1.0)
                port = int(envsource.light_values().get("port") or 0)
            if port and port != parts.port:
                url, started = _with_port(url, port), True
                parts = urlsplit(url)
                moved = f"{said}: moved this home's server to port {port} (saved in {config})"
                if on_start:
                    on_start()
        except hook.HookSkip as exc:
            if "timed out" not in str(exc):  # a cold server's first search may outlast one ask
                return ServerState(url, "refused", recorded_pid(settings.home), str(exc), moved)
        if remaining <= 0:
            log = settings.log_dir / "serve.log"
            detail = f"it did not answer within {wait_seconds:.0f} s (see {log})"
            return ServerState(url, "starting", recorded_pid(settings.home), detail, moved)
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(0.3)


def _pinned(settings: Settings) -> str:
    """Where the port is fixed so setup must not move it (the environment, or an explicit url); '' if not."""
    if envsource.environ().get("EPISODIC_PORT"):
        return "EPISODIC_PORT"
    if settings.url:
        return "`url` in the config"
    return "" if settings.hook_autostart else "`port` in the config: hook_autostart is off"


def _with_port(url: str, port: int) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    return parts._replace(netloc=f"[{host}]:{port}" if ":" in host else f"{host}:{port}").geturl()


def port_taken_message(settings: Settings, host: str, port: int) -> str:
    """`episodic serve` on a port something already listens on: who, when we know it."""
    pid = recorded_pid(settings.home)
    if pid is not None and port == settings.port:
        return (
            f"an episodic server is already running at {settings.endpoint_url} (pid {pid}, from "
            f"{settings.home / autostart.PID_FILE}); the prompt hook and MCP clients use it as it is. "
            f"To run this one instead: `kill {pid}` and run `episodic serve` again, or pick another --port"
        )
    return (
        f"{host}:{port} is already in use by another process (no running server recorded in "
        f"{settings.home / autostart.PID_FILE}); stop it or pick another --port"
    )
