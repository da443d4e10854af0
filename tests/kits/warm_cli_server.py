"""The tests' warm `python -m episodic`: one interpreter per test worker imports the CLI once, then forks
a child per call that becomes `python -m episodic ARGS` (or the `episodic` script) with the caller's argv, environment, cwd and
standard streams (passed over a Unix socket). See tests/kits/warm_cli.py for why and for what stays cold.

Run as `python warm_cli_server.py SOCKET PARENT_PID`. Per request a monitor process is forked; it forks
the child, tells the client the child's pid, waits for it and sends its exit status; so this process never
waits and stays single-threaded (safe to fork).
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import socket
import sys

# the CLI's command areas and the core every command path uses; importing has no side effect but time
PRELOAD = (
    "episodic.cli",
    "episodic.cli.lazy_group",
    "episodic.assembly",
    "episodic.assembly.features",
    "episodic.core.ingest",
    "episodic.core.search",
    "episodic.store.sqlite",
    "episodic.distill.heuristic",
    "episodic.parse.agents",
    "episodic.scrub",
    "episodic.embed.minilm",
    "episodic.hooks.prompt",
    "episodic.dream.archive",
    "episodic.failures.service",
    "episodic.failures.sqlite_store",
    "episodic.scratch.service",
    "episodic.history.sqlite_store",
    "episodic.history.links",
)
MAX_REQUEST = 1 << 20


def preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from episodic.cli.lazy_group import AREAS

    for target in AREAS.values():
        importlib.import_module(target.partition(":")[0])


def serve(path: str, parent: int) -> tuple[dict[str, object], list[int]]:
    """Accepts calls until the test worker that started us is gone; returns only in a forked child."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1.0)
    while os.getppid() == parent:
        _reap()
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        data, fds, _flags, _addr = socket.recv_fds(conn, MAX_REQUEST, 3)
        if os.fork() == 0:  # the monitor
            listener.close()
            child = os.fork()
            if child == 0:
                conn.close()
                return json.loads(data), fds
            try:
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": child}).encode())
                _, status = os.waitpid(child, 0)
                conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
            finally:
                os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # the worker is gone without stopping us
    sys.exit(0)


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def become(request: dict[str, object], fds: list[int]) -> None:
    """Turns this forked child into the process `subprocess` would have started."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(request["cwd"]))
    args = request["args"]
    assert isinstance(args, list)
    script = request.get("script")
    if isinstance(script, str):  # the console script: its folder first on the path, its path as argv[0]
        sys.path[0] = os.path.dirname(script)
        sys.argv = [script, *args]
    else:
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        sys.argv = ["-m", *args]  # run_module replaces argv[0] with the module's path, as `-m` does


if __name__ == "__main__":
    preload()
    call, streams = serve(sys.argv[1], int(sys.argv[2]))
    become(call, streams)
    if call.get("script"):
        from episodic.cli import main

        sys.exit(main())
    runpy.run_module("episodic", run_name="__main__", alter_sys=True)
