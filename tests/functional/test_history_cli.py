"""The history commands through the `episodic` entry point, on the demo corpus: index writes the history,
then history search/thread/query/decisions/timeline/show, link, link show and resume."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from kits import warm_cli

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


def run(args: list[str], home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "EPISODIC_HOME": str(home),
        "HOME": str(home.parent / "user-home"),
        "EPISODIC_EMBEDDER": "hashing",
        **extra,
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=300
    )


def ok(args: list[str], home: Path, **extra: str) -> str:
    done = run(args, home, **extra)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_history_commands_end_to_end(episodic_home: Path, tmp_path: Path) -> None:
    report = json.loads(ok(["index", str(DEMO), "--json"], episodic_home))
    assert report["indexed"] >= 5
    days = json.loads(ok(["history", "timeline", "--json"], episodic_home))["days"]
    sessions = [s for d in days for s in d["sessions"]]
    assert len(sessions) == report["indexed"] and len({s["session_id"] for s in sessions}) == len(sessions)
    first = sessions[0]
    record = json.loads(ok(["history", "show", first["session_id"]], episodic_home))
    word = max((w.strip(".,:;!?'\"()") for w in record["turns"][0]["prompt"].split()), key=len)

    found = json.loads(ok(["history", "search", word, "--json"], episodic_home))["results"]
    assert first["session_id"] in {r["session_id"] for r in found}
    hit = next(r for r in found if r["session_id"] == first["session_id"])
    assert hit["count"] >= 1 and hit["resume"].endswith(f"claude --resume {first['session_id']}")
    assert word.lower() in ok(["history", "search", word], episodic_home).lower()

    thread = json.loads(ok(["history", "thread", word, "--max-chars", "2000", "--json"], episodic_home))
    assert len(thread["text"]) <= 2000 and first["session_id"] in thread["sessions"]
    query = json.loads(
        ok(
            ["history", "query", word, "--session", first["session_id"], "--context", "2", "--json"],
            episodic_home,
        )
    )["results"]
    assert [r["session_id"] for r in query] == [first["session_id"]] and query[0]["context"]
    assert "decision" in ok(["history", "decisions", word], episodic_home).lower()
    day = first["started_at"][:10]
    assert first["session_id"] in ok(["history", "timeline", "--since", day, "--until", day], episodic_home)
    bad = run(["history", "timeline", "--week", "2026-W77"], episodic_home)
    assert bad.returncode == 1 and "ISO week" in bad.stderr

    assert "linked" in ok(["link", first["session_id"], "ENT-297"], episodic_home)
    ok(["link", first["session_id"], "https://github.com/acme/shop/issues/3"], episodic_home)
    item = json.loads(ok(["link", "show", "ent-297", "--json"], episodic_home))
    assert item["kind"] == "item" and [x["session_id"] for x in item["links"]] == [first["session_id"]]
    own = json.loads(ok(["link", "show", first["session_id"], "--json"], episodic_home))
    assert {x["item"] for x in own["links"] if x["origin"] == "confirmed"} == {"ENT-297", "acme/shop#3"}
    refused = run(["link", first["session_id"], "not an item"], episodic_home)
    assert refused.returncode == 1 and "not a work item" in refused.stderr

    printed = ok(["resume", first["session_id"], "--print"], episodic_home).strip()
    assert printed.endswith(f"claude --resume {first['session_id']}")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    claude = fake_bin / "claude"
    claude.write_text(f'#!/bin/sh\necho "$PWD $@" > {tmp_path / "resumed.txt"}\n')
    claude.chmod(claude.stat().st_mode | stat.S_IEXEC)
    ok(["resume", first["session_id"]], episodic_home, PATH=f"{fake_bin}:{os.environ['PATH']}")
    assert (tmp_path / "resumed.txt").read_text().strip().endswith(f"--resume {first['session_id']}")
