"""What the failure hook costs Codex CLI and Gemini CLI on a command that succeeded.

    python scripts/bench_failure_hook_agents.py [--n 40] [--rollout-mb 20]

Claude Code calls the hook only for a failed command (`PostToolUseFailure`); Codex (`PostToolUse` of Bash) and
Gemini CLI (`AfterTool` of run_shell_command) call it after every shell command, so its cost on a success is
paid on every command. This times the hook process (as the CLIs start it: one subprocess, the payload on
stdin) on a succeeded command: Gemini's (the exit code read from the report), Codex's (the exit code read
from the tail of a rollout of --rollout-mb MB). No server is asked on that path (the URL points at a closed
port: a request would be logged as "server unreachable", and the run stops). Wall and the hook's own CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_failures import run_hook


def _rollout(path: Path, megabytes: int) -> Path:
    """A rollout of about `megabytes` MB whose last records are the call's `item_completed` (exit 0)."""
    filler = json.dumps({"type": "response_item", "payload": {"type": "message", "content": "x" * 2000}})
    with path.open("w") as handle:
        for _ in range(megabytes * 1_000_000 // (len(filler) + 1)):
            handle.write(filler + "\n")
        item = {"type": "CommandExecution", "id": "call_1", "status": "completed", "exit_code": 0}
        handle.write(
            json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": item}}) + "\n"
        )
    return path


def payloads(tmp: Path, megabytes: int) -> dict[str, dict[str, object]]:
    report = "<untrusted_context>\nOutput: ok  \texample.com/shop\t0.012s\nProcess Group PGID: 42\n</untrusted_context>"
    return {
        "codex": {
            "hook_event_name": "PostToolUse",
            "session_id": "s",
            "cwd": str(tmp),
            "tool_name": "Bash",
            "tool_input": {"command": "go test ./..."},
            "tool_response": "ok  \texample.com/shop\t0.012s\n",
            "tool_use_id": "call_1",
            "transcript_path": str(_rollout(tmp / "rollout.jsonl", megabytes)),
        },
        "gemini": {
            "hook_event_name": "AfterTool",
            "session_id": "s",
            "cwd": str(tmp),
            "tool_name": "run_shell_command",
            "tool_input": {"command": "go test ./..."},
            "tool_response": {"llmContent": report, "returnDisplay": "ok"},
        },
    }


def time_hook(payload: dict[str, object], env: dict[str, str], n: int, log: Path) -> dict[str, float]:
    walls, cpus = [], []
    for i in range(n + 2):
        done, wall, cpu = run_hook(payload, env)
        last = log.read_text().splitlines()[-1]
        if done.returncode or done.stdout or "ok: the command succeeded" not in last:
            raise SystemExit(f"unexpected hook outcome: {last}")
        if i >= 2:  # the first runs warm the file cache
            walls.append(wall)
            cpus.append(cpu)
    q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]  # noqa: E731
    return {
        "n": n,
        "p50_ms": q(walls, 50),
        "p95_ms": q(walls, 95),
        "cpu_p50_ms": q(cpus, 50),
        "cpu_p95_ms": q(cpus, 95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rollout-mb", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp),
            "EPISODIC_HOME": str(tmp / "home"),
            "EPISODIC_TOKEN": "epi_bench",
            "EPISODIC_URL": "http://127.0.0.1:9/mcp",
            "EPISODIC_HOOK_AUTOSTART": "false",
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        }
        log = tmp / "home" / "logs" / "hook.log"
        print(f"load average {os.getloadavg()[0]:.1f}; rollout {args.rollout_mb} MB")
        for agent, payload in payloads(tmp, args.rollout_mb).items():
            r = time_hook(payload, env, args.n, log)
            print(
                f"  {agent}: a succeeded command, n={r['n']}: wall p50 {r['p50_ms']:.1f} ms  p95 {r['p95_ms']:.1f} ms; "
                f"hook CPU p50 {r['cpu_p50_ms']:.1f} ms  p95 {r['cpu_p95_ms']:.1f} ms"
            )


if __name__ == "__main__":
    main()
