"""The prompt hook as each agent CLI runs it: Claude Code and Codex CLI (`UserPromptSubmit`), Gemini CLI
(`BeforeAgent`); warm p50/p95 against a local server, and the cost on a prompt when no server answers.

    python scripts/bench_hook_agents.py [--n 30] [--embedder hashing|minilm] [--down-n 10]

The index and the prompts are scripts/bench_hook.py's (synthetic verified cards). Each CLI's payload has its
own fields (Codex adds `turn_id` and `model`, Gemini CLI `timestamp`); the hook answers each under its event.
Server down: the local endpoint is a closed port. With `hook_autostart = false` the hook fails open at once;
with it on (the default) it starts `episodic serve` in the background and waits for it within its 1.5 s budget,
so a prompt costs at most the budget until that server answers (the started server is stopped afterwards).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_hook import PROMPTS, TENANT, _cards, _summary, _time
from episodic.assembly import build_memory
from episodic.cards.write import store_card
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.models import DistillerInfo
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.plumbing import envsource

HOOK = [sys.executable, "-m", "episodic.hooks.prompt"]


def payload(agent: str, prompt: str, cwd: str) -> dict[str, object]:
    """What each CLI sends (Claude Code 2.1, Codex CLI 0.171, Gemini CLI 0.61)."""
    base = {"session_id": f"bench-{agent}", "transcript_path": "", "cwd": cwd, "prompt": prompt}
    if agent == "gemini":
        return {**base, "hook_event_name": "BeforeAgent", "timestamp": "2026-12-07T00:00:00.000Z"}
    if agent == "codex":
        return {**base, "hook_event_name": "UserPromptSubmit", "turn_id": "t1", "model": "gpt-5"}
    return {**base, "hook_event_name": "UserPromptSubmit", "permission_mode": "default"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def warm(env: dict[str, str], n: int, cwd: str) -> dict[str, dict[str, float]]:
    out = {}
    for agent in ("claude-code", "codex", "gemini"):
        runs, injected = [], 0
        for i in range(n):
            elapsed, printed = _time(HOOK, json.dumps(payload(agent, PROMPTS[i % len(PROMPTS)], cwd)), env)
            runs.append(elapsed)
            event = json.loads(printed)["hookSpecificOutput"]["hookEventName"] if printed else ""
            injected += event == payload(agent, "", cwd)["hook_event_name"]
        out[agent] = {**_summary(runs), "injected_under_its_event": injected}
    return out


def down(env: dict[str, str], n: int, cwd: str, autostart: bool) -> dict[str, float]:
    """No server at the endpoint: the hook's wall time per prompt (it always exits 0, printing nothing)."""
    port = _free_port()
    home = Path(env["EPISODIC_HOME"]).with_name(f"down-{autostart}")
    home.mkdir()
    down_env = {
        **env,
        "EPISODIC_HOME": str(home),
        "EPISODIC_PORT": str(port),
        "EPISODIC_HOOK_AUTOSTART": "true" if autostart else "false",
    }
    down_env.pop("EPISODIC_URL", None)
    try:
        runs = []
        for i in range(n):
            elapsed, _ = _time(HOOK, json.dumps(payload("codex", PROMPTS[i % len(PROMPTS)], cwd)), down_env)
            runs.append(elapsed)
        return _summary(runs)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int((home / "serve.pid").read_text()), signal.SIGTERM)  # the server the hook started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--down-n", type=int, default=10)
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="minilm")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-agents-"))
    try:
        settings = load_settings(home=tmp / "home", embedder=args.embedder)
        memory = build_memory(settings)
        for session_id, card in _cards():
            store_card(memory, TENANT, card, session_id=session_id, distiller=DistillerInfo(kind="heuristic"))
        env = {
            "PATH": envsource.environ().get("PATH", ""),
            "HOME": str(tmp),
            "EPISODIC_HOME": str(tmp / "hook-home"),
            "EPISODIC_TOKEN": LocalTokenStore(settings.tokens_path).add(TENANT),
            "EPISODIC_EXPERIMENT_ENABLED": "false",  # every prompt answered: the holdout is not what is timed
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        }
        with BackgroundServer(build_endpoint(settings, memory)) as server:
            env["EPISODIC_URL"] = server.url
            for prompt in PROMPTS[:3]:  # warm the server (embedder, SQLite pages)
                _time(HOOK, json.dumps(payload("claude-code", prompt, str(tmp))), env)
            report = warm(env, args.n, str(tmp))
        off = down({**env, "EPISODIC_EMBEDDER": "hashing"}, args.down_n, str(tmp), autostart=False)
        started = down({**env, "EPISODIC_EMBEDDER": "hashing"}, min(args.down_n, 3), str(tmp), autostart=True)
    finally:
        time.sleep(0.2)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"prompt hook per agent CLI (embedder {args.embedder}, N={args.n}, warm local server)")
    for agent, row in report.items():
        print(
            f"  {agent:<12} p50 {row['p50_ms']:>6.1f} ms  p95 {row['p95_ms']:>6.1f} ms  "
            f"injected under its own event {int(row['injected_under_its_event'])}/{args.n}"
        )
    print(
        f"server down, hook_autostart = false: p50 {off['p50_ms']:.0f} ms, p95 {off['p95_ms']:.0f} ms (n={off['n']:.0f})"
    )
    print(
        f"server down, hook_autostart on: p50 {started['p50_ms']:.0f} ms, p95 {started['p95_ms']:.0f} ms "
        f"(n={started['n']:.0f}; the budget is 1.5 s)"
    )
    print(f"  machine load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
