"""What a newcomer reads after `index` and `quickstart` in a fresh home: counts that say what they count,
and the next step once the search has been shown."""

from __future__ import annotations

from pathlib import Path

from client_env import DEMO, episodic


def _config(home: Path, extra: str = "") -> None:
    (home / "config.toml").write_text('embedder = "hashing"\n' + extra)


def test_index_without_scope_rules_counts_the_projects_not_other_projects(episodic_home: Path) -> None:
    _config(episodic_home)
    done = episodic("index", str(DEMO))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "scope rules: none set" in lines, done.stdout
    assert "  6 projects indexed and injected" in lines, done.stdout  # no project was listed: none is "other"


def test_index_with_a_rule_counts_the_projects_besides_those_it_lists(episodic_home: Path) -> None:
    _config(episodic_home, 'index_exclude = ["*webshop*"]\n')
    done = episodic("index", str(DEMO))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    listed = [line for line in lines if line.startswith("  /") and "index no" in line]
    assert len(listed) == 1, done.stdout
    assert "  5 other projects indexed and injected" in lines, done.stdout


def test_quickstart_ends_on_the_setup_that_wires_the_memory_into_claude_code(episodic_home: Path) -> None:
    _config(episodic_home)
    done = episodic("quickstart")
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("Next, to give this memory to your agent"), done.stdout
    assert "setup claude-code --write`" in last and "doctor` then checks every link" in last, last


def test_quickstart_names_only_the_agents_found_and_not_yet_wired(episodic_home: Path) -> None:
    _config(episodic_home)
    user_home = episodic_home.parent / "user-home"
    (user_home / ".claude" / "projects").mkdir(parents=True)
    (user_home / ".codex" / "sessions").mkdir(parents=True)
    (user_home / ".claude.json").write_text('{"mcpServers": {"episodic": {"type": "stdio", "command": "x"}}}')
    done = episodic("quickstart")
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "setup codex --write`" in last and "claude-code" not in last, done.stdout
    (user_home / ".codex" / "sessions").rmdir()
    (user_home / ".codex").rmdir()
    again = episodic("quickstart")
    assert "Next, to give" not in again.stdout, again.stdout  # every agent found is wired: nothing to add
