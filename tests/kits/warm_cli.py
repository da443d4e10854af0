"""`run`: subprocess.run for `[sys.executable, "-m", "episodic", ...]` or the venv's `episodic` script, forked from a
warm interpreter.

The suite starts a few hundred `episodic` processes; each paid ~0.4 s of CPU importing pydantic, numpy
and the CLI before doing its work (issue 41). Here each test worker keeps one interpreter that has imported
them (tests/kits/warm_cli_server.py) and every call is a fork of it that becomes the real CLI: `main()` through
`python -m episodic` with the caller's argv, environment, cwd and stdin/stdout/stderr file descriptors,
its exit status and streams returned as a CompletedProcess, TimeoutExpired on timeout.

What a fork cannot reproduce goes cold, to a real process: any other command or keyword argument, or
EPISODIC_TESTS_COLD_CLI=1 (the whole suite on real processes). Import-time and start-up behaviour is
covered by the tests that start `episodic` themselves (Popen, the `episodic` script, the agents' hooks,
tests/unit/cli/test_cli_lazy.py) and by .ci/run's real commands.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import locale
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

COLD_SWITCH = "EPISODIC_TESTS_COLD_CLI"
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "episodic")  # the venv's, as a user's shell runs it
SERVER = Path(__file__).with_name("warm_cli_server.py")
# settings read when the interpreter or numpy starts: a call that changes one needs a fresh process
_STARTUP_PREFIXES = ("PYTHON", "LC_", "OPENBLAS_", "OMP_", "MKL_")
_STARTUP_NAMES = ("LANG", "LANGUAGE")
_SUPPORTED = {
    "input",
    "capture_output",
    "stdout",
    "stderr",
    "stdin",
    "text",
    "env",
    "cwd",
    "timeout",
    "check",
}
_START_SECONDS = 60.0


def _startup_view(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES}


class _Server:
    """One warm interpreter per test worker and interpreter settings (the environment's PYTHON*, locale and
    BLAS variables, read when an interpreter starts), started on first use, stopped at exit."""

    def __init__(self, startup: dict[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="warm-cli-"))
        self.path = str(self.folder / "sock")
        ours = {k: v for k, v in os.environ.items() if k not in _startup_view(dict(os.environ))}
        self.env = {**ours, **startup}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), self.path, str(os.getpid())],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        atexit.register(self.stop)

    def connect(self) -> socket.socket | None:
        """A connection once the server listens; None if it died or never listened."""
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline and self.process.poll() is None:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                conn.connect(self.path)
                return conn
            except (FileNotFoundError, ConnectionRefusedError):
                conn.close()
                time.sleep(0.02)
        return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


_servers: dict[tuple[tuple[str, str], ...], _Server] = {}
_server_lock = threading.Lock()


def _warm_server(startup: dict[str, str]) -> _Server:
    key = tuple(sorted(startup.items()))
    with _server_lock:
        server = _servers.get(key)
        if server is None or server.process.poll() is not None:
            server = _servers[key] = _Server(startup)
        return server


def goes_warm(cmd: list[str], kwargs: dict[str, Any]) -> bool:
    """Whether a fork can stand for this call (everything else runs as a real process)."""
    return (
        os.environ.get(COLD_SWITCH) != "1"
        and (cmd[:3] == [sys.executable, "-m", "episodic"] or cmd[:1] == [CONSOLE_SCRIPT])
        and set(kwargs) <= _SUPPORTED
        and kwargs.get("stdin") in (None, subprocess.DEVNULL)
        and kwargs.get("stdout") in (None, subprocess.PIPE, subprocess.DEVNULL)
        and kwargs.get("stderr") in (None, subprocess.PIPE, subprocess.DEVNULL)
        and not (kwargs.get("stdin") is not None and kwargs.get("input") is not None)
    )


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(cmd, **kwargs), forked warm when cmd is `python -m episodic ...` or the `episodic` script
    (see the module doc)."""
    if goes_warm(cmd, kwargs):
        given = kwargs.pop("env", None)
        env = dict(os.environ) if given is None else {str(k): str(v) for k, v in given.items()}
        conn = _warm_server(_startup_view(env)).connect()
        if conn is not None:
            return _run_warm(conn, cmd, env, **kwargs)
        kwargs["env"] = given
    return subprocess.run(cmd, **kwargs)


def _pipe_or(choice: Any, inherited: int, capture: bool) -> tuple[int, int | None]:
    """(fd for the child, our reading end or None)."""
    if capture or choice == subprocess.PIPE:
        read, write = os.pipe()
        return write, read
    if choice == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_RDWR), None
    return os.dup(inherited), None


def _run_warm(
    conn: socket.socket,
    cmd: list[str],
    env: dict[str, str],
    *,
    input: str | bytes | None = None,
    capture_output: bool = False,
    stdout: Any = None,
    stderr: Any = None,
    stdin: Any = None,
    text: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    check: bool = False,
    **_: Any,
) -> subprocess.CompletedProcess[Any]:
    encoding = locale.getpreferredencoding(False)
    if input is not None:
        child_in, our_in = os.pipe()
        data = input.encode(encoding) if isinstance(input, str) else bytes(input)
    else:
        child_in, our_in = _pipe_or(stdin, 0, False)[0], None
        data = b""
    child_out, our_out = _pipe_or(stdout, 1, capture_output)
    child_err, our_err = _pipe_or(stderr, 2, capture_output)
    script = cmd[0] if cmd[0] == CONSOLE_SCRIPT else None
    args = cmd[1:] if script else cmd[3:]
    request = {
        "args": args,
        "script": script,
        "env": env,
        "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
    }
    try:
        socket.send_fds(conn, [json.dumps(request).encode()], [child_in, child_out, child_err])
    finally:
        for fd in (child_in, child_out, child_err):
            os.close(fd)
    streams = {fd: bytearray() for fd in (our_out, our_err) if fd is not None}

    def captured() -> list[Any]:
        raw = [bytes(streams[fd]) if fd is not None else None for fd in (our_out, our_err)]
        return [_text(b, encoding) if text and b is not None else b for b in raw]

    try:
        returncode = _exchange(conn, our_in, data, streams, args, timeout)
    except TimeoutError:
        out, err = captured()
        raise subprocess.TimeoutExpired(cmd, timeout or 0.0, out, err) from None
    out, err = captured()
    done = subprocess.CompletedProcess(cmd, returncode, out, err)
    if check:
        done.check_returncode()
    return done


def _text(data: bytes, encoding: str) -> str:
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")  # as subprocess's text mode


def _await_exit(conn: socket.socket) -> None:
    conn.settimeout(_START_SECONDS)
    with contextlib.suppress(OSError):
        while (message := conn.recv(4096)) and "returncode" not in json.loads(message):
            pass


def _exchange(
    conn: socket.socket,
    our_in: int | None,
    data: bytes,
    streams: dict[int, bytearray],
    args: list[str],
    timeout: float | None,
) -> int:
    """Feeds stdin, drains stdout/stderr and reads pid and exit status, like Popen.communicate."""
    deadline = None if timeout is None else time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ)
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    if our_in is not None:
        if data:
            os.set_blocking(our_in, False)
            selector.register(our_in, selectors.EVENT_WRITE)
        else:
            os.close(our_in)
            our_in = None
    pid = returncode = None
    sent = 0
    try:
        while returncode is None or any(fd in selector.get_map() for fd in streams):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    _await_exit(conn)  # as subprocess.run: the killed child is waited for
                raise TimeoutError(args)
            for key, _ in selector.select(left):
                fd = key.fd
                if key.fileobj is conn:
                    message = conn.recv(4096)
                    if not message:
                        selector.unregister(conn)
                        if returncode is None:
                            raise RuntimeError(f"the warm CLI server dropped `episodic {' '.join(args)}`")
                        continue
                    answer = json.loads(message)
                    pid = answer.get("pid", pid)
                    returncode = answer.get("returncode", returncode)
                elif fd == our_in:
                    try:
                        sent += os.write(fd, data[sent : sent + 65536])
                    except BrokenPipeError:
                        sent = len(data)
                    if sent >= len(data):
                        selector.unregister(fd)
                        os.close(fd)
                        our_in = None
                else:
                    chunk = os.read(fd, 65536)
                    if chunk:
                        streams[fd] += chunk
                    else:
                        selector.unregister(fd)
    finally:
        selector.close()
        conn.close()
        for fd in [*streams, *([our_in] if our_in is not None else [])]:
            with contextlib.suppress(OSError):
                os.close(fd)
    assert returncode is not None
    return returncode
