"""Issue 14 item 4: no single line ends `episodic mcp` (stdio, run as Claude Code runs it: a subprocess)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from kits import warm_cli

PING = b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n'
HOSTILE_LINES = {
    "100,000 brackets": b"[" * 100_000 + b"\n",
    "5,000-digit id": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}\n',
    "lone surrogate method": b'{"jsonrpc":"2.0","id":3,"method":"\\ud800"}\n',
    "lone surrogate query": (
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_traces",'
        b'"arguments":{"query":"docker build \\udc80 fails with permission denied"}}}\n'
    ),
    "invalid utf-8": b'{"jsonrpc":"2.0","id":5,"method":"\xff\xfe"}\n',
    "deep params": b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"a":'
    + b"[" * 500
    + b"]" * 500
    + b"}}\n",
    "a 3 MB line": b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"' + b"a" * 3_000_000 + b'"}}\n',
    "float k": (
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_traces",'
        b'"arguments":{"query":"docker build fails with permission denied","k":3.0}}}\n'
    ),
}


def test_every_hostile_line_gets_an_answer_and_the_server_goes_on(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")},
        "EPISODIC_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
        "EPISODIC_EMBEDDER": "hashing",
    }
    stdin = b"".join(line + PING for line in HOSTILE_LINES.values())
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "mcp"], input=stdin, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answers = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert len(answers) == 2 * len(HOSTILE_LINES), answers
    pings = answers[1::2]
    assert all(p == {"jsonrpc": "2.0", "id": "after", "result": {}} for p in pings), pings
    by_case = dict(zip(HOSTILE_LINES, answers[0::2], strict=True))
    assert by_case["100,000 brackets"]["error"]["code"] == -32700
    assert by_case["5,000-digit id"]["error"]["code"] == -32700
    assert by_case["lone surrogate method"]["error"]["code"] == -32600
    assert by_case["lone surrogate method"]["id"] == 3
    assert by_case["lone surrogate query"]["error"]["code"] == -32602
    assert "lone surrogate" in by_case["lone surrogate query"]["error"]["message"]
    assert by_case["invalid utf-8"]["error"]["code"] == -32601  # U+FFFD method: not found, not a crash
    assert by_case["deep params"]["error"]["code"] == -32700
    assert by_case["a 3 MB line"]["error"]["code"] == -32600
    assert by_case["float k"]["result"]["isError"] is False, by_case["float k"]
