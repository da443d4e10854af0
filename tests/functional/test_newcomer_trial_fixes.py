"""What a newcomer meets in a fresh home: doctor saying a missing hook once, the Codex preview ending on how to
write it, setup wiring the session-end hook with the offline distiller, history search finding a session by most
of the words asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kits.client_env import DEMO, episodic, stop_spawned_server


def _config(home: Path) -> None:
    (home / "config.toml").write_text('embedder = "hashing"\n')


def test_doctor_before_setup_says_the_missing_hook_once(episodic_home: Path) -> None:
    _config(episodic_home)
    assert episodic("index", str(DEMO)).returncode == 0  # an index, so doctor reaches the hook-run check
    done = episodic("doctor")
    lines = done.stdout.splitlines()
    entry = next(line for line in lines if line.startswith("[fail] hook entry:"))
    assert "no episodic UserPromptSubmit hook" in entry, done.stdout
    run = next(line for line in lines if "] prompt hook:" in line)
    assert run.startswith("[warn] prompt hook: not tried"), done.stdout
    assert "no episodic UserPromptSubmit hook" not in run, done.stdout


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_an_agent_preview_ends_on_how_to_write_it_after_its_hooks(episodic_home: Path, agent: str) -> None:
    _config(episodic_home)
    done = episodic("setup", agent)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    again = [i for i, line in enumerate(lines) if line.startswith("# Run again with --write")]
    hooks = [
        i for i, line in enumerate(lines) if line.startswith(("# The prompt hook", "# The session-end hook"))
    ]
    assert len(again) == 1 and hooks and again[0] > max(hooks), done.stdout
    assert all(line.startswith("# distiller") or line.startswith("#  ") for line in lines[again[0] + 1 :]), (
        done.stdout
    )


def _claude_hooks(episodic_home: Path) -> dict:
    return json.loads((episodic_home.parent / "user-home" / ".claude" / "settings.json").read_text())["hooks"]


def test_setup_claude_code_with_the_offline_distiller_distils_an_ended_session(episodic_home: Path) -> None:
    _config(episodic_home)
    try:
        done = episodic("setup", "claude-code", "--distiller", "heuristic", "--write")
        assert done.returncode == 0, done.stderr
        ended = json.dumps(_claude_hooks(episodic_home)["SessionEnd"])
        assert ended.count("hook session-distill") == 1, ended
        with (episodic_home / "config.toml").open("a") as config:  # switched off: the next setup takes it out
            config.write("hook_session_end = false\n")
        again = episodic("setup", "claude-code", "--write")
        assert again.returncode == 0, again.stderr
        assert "SessionEnd" not in _claude_hooks(episodic_home)
    finally:
        stop_spawned_server(episodic_home)  # `setup --write` started the home's server


def _hit_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if not line.startswith("  ")]


def test_history_search_finds_a_session_by_inflected_words_and_by_most_of_the_words(
    episodic_home: Path,
) -> None:
    _config(episodic_home)
    assert episodic("index", str(DEMO)).returncode == 0
    worker = "5dc2580e-cc63-56cc-9ea5-d9436faaf1a1"  # "every docker build reinstalls … one source file"

    inflected = episodic("history", "search", "rebuilding sources")  # the session says "rebuild", "source"
    assert inflected.returncode == 0, inflected.stderr
    assert _hit_lines(inflected.stdout)[0].split()[1] == worker, inflected.stdout

    some = episodic("history", "search", "docker layers zebrafish")  # no session says "zebrafish"
    lines = _hit_lines(some.stdout)
    assert (
        lines[0]
        == "No session names every word of 'docker layers zebrafish'; these name some of them, most first:"
    )
    assert lines[1].split()[1] == worker and lines[1].endswith("(not: zebrafish)"), some.stdout

    ranked = _hit_lines(episodic("history", "search", "biome ci").stdout)  # all words first, then some
    heading = ranked.index("Sessions naming only some of the words of 'biome ci', most first:")
    assert heading > 0 and "(not:" not in " ".join(ranked[:heading]), ranked
    assert all(line.endswith("(not: biome)") for line in ranked[heading + 1 :]), ranked
    found = json.loads(episodic("history", "search", "docker layers zebrafish", "--json").stdout)["results"]
    assert found[0]["missing"] == ["zebrafish"]
