"""The prompt hook's first prompt with no server running: how often the server it starts answers in budget.

    python scripts/bench_hook_cold.py [--n 5] [--embedder minilm|hashing] [--json]

Indexes the demo corpus into a temp EPISODIC_HOME, runs `episodic setup claude-code --write` in a temp
HOME, then n times: no server; the hook command exactly as setup wrote it (venv off PATH) starts one in
the background; its log line says whether that first prompt was answered; once the server listens, two
more prompts are timed (the first loads the embedder); the started server is stopped. The budget is the hook's default 1.5 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EPISODIC = Path(sys.executable).parent / "episodic"
PROMPT = "npm run check passes locally but the GitHub Actions job fails with Biome lint errors, why?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_hook(command: str, env: dict[str, str], log: Path) -> tuple[bool, str]:
    before = log.read_text().splitlines() if log.exists() else []
    done = subprocess.run(
        command, shell=True, input=json.dumps({"prompt": PROMPT}), env=env, capture_output=True, text=True
    )
    line = log.read_text().splitlines()[len(before)]
    return bool(done.stdout), line.split("user-prompt-submit ", 1)[1]


def wait_for_port(port: int, *, listening: bool = True) -> None:
    """Until the port accepts connections (listening) or refuses them (the stopped server let it go)."""
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            if listening:
                return
        except OSError:
            if not listening:
                return
        time.sleep(0.05)


def stop_server(home: Path, port: int) -> None:
    """Stop the server the hook (or setup) started, and wait until its port is free."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        os.killpg(int((home / "serve.pid").read_text()), signal.SIGTERM)
    wait_for_port(port, listening=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hook-cold-") as tmp:
        home, user_home = Path(tmp) / "home", Path(tmp) / "user"
        home.mkdir()
        user_home.mkdir()
        port = free_port()
        (home / "config.toml").write_text(f'embedder = "{args.embedder}"\nport = {port}\n')
        path = os.pathsep.join(
            p for p in os.environ.get("PATH", "").split(os.pathsep) if p != str(EPISODIC.parent)
        )
        env = {"PATH": path, "HOME": str(user_home), "EPISODIC_HOME": str(home), "LANG": "C.UTF-8"}
        if os.environ.get("EPISODIC_CACHE_FROM"):  # reuse cached embeddings, e.g. ~/.episodic/cache
            subprocess.run(["cp", "-r", os.environ["EPISODIC_CACHE_FROM"], str(home / "cache")], check=True)
        for step in (
            ["index", str(REPO / "shared" / "episodic" / "demo")],
            ["setup", "claude-code", "--write"],
        ):
            subprocess.run([str(EPISODIC), *step], env=env, check=True, capture_output=True)
        stop_server(home, port)  # setup leaves its server answering: each round starts with none
        settings = json.loads((user_home / ".claude" / "settings.json").read_text())
        command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        log = home / "logs" / "hook.log"
        cold: list[dict[str, object]] = []
        first_ms: list[float] = []  # the started server's first query (it loads the embedder then)
        warm_ms: list[float] = []
        for _ in range(args.n):
            (home / "serve.started").unlink(missing_ok=True)
            answered, line = run_hook(command, env, log)
            cold.append({"answered": answered, "log": line})
            wait_for_port(port)
            for series in (first_ms, warm_ms):
                started = time.monotonic()
                run_hook(command, env, log)
                series.append((time.monotonic() - started) * 1000)
            stop_server(home, port)
        result = {
            "embedder": args.embedder,
            "n": args.n,
            "cold_answered": sum(1 for c in cold if c["answered"]),
            "cold": cold,
            "first_query_ms_p50": round(statistics.median(first_ms), 1),
            "warm_ms_p50": round(statistics.median(warm_ms), 1),
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{args.embedder}: first prompt answered by the server it started in {result['cold_answered']}/{args.n}"
    )
    for c in cold:
        print(f"  {c['log']}")
    print(
        f"  once it listens: its first prompt p50 {result['first_query_ms_p50']} ms, then p50 {result['warm_ms_p50']} ms"
    )


if __name__ == "__main__":
    main()
