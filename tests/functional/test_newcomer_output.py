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
