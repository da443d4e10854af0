"""Scope rules: include/exclude by path and glob for indexing and injection separately, the repository's
`.episodic` file, the session marker; `index`, `inspect` and `doctor` show what the rules decide."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli, doctor
from episodic.kernel.settings import load_settings
from episodic.sessions.scope import SKIP_MARKER, ScopeRules, matches
from fakes.experiment_sessions import write_session


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/srv/code/acme", "/srv/code/acme", True),
        ("/srv/code/acme", "/srv/code/acme/api/src", True),  # a path covers everything below it
        ("/srv/code/acme", "/srv/code/acme-old", False),  # but not a sibling sharing its prefix
        ("/srv/code/acme/", "/srv/code/acme/api", True),
        ("/srv/code/client-*", "/srv/code/client-x/deep/dir", True),
        ("/srv/code/client-*", "/srv/code/other/client-x", False),
        ("/srv/code/*/secret", "/srv/code/a/secret/src", True),
        ("secret-*", "/home/me/secret-thing/app", True),  # no '/': a folder name anywhere on the path
        ("secret-*", "/home/me/app-secret-x", False),
        ("acme", "/srv/acme/x", True),
        ("~/work", "~/work/app", True),
        ("*", "", False),  # no working directory matches nothing
    ],
)
def test_patterns_match_paths_and_globs(pattern: str, path: str, expected: bool) -> None:
    from episodic.sessions.scope import normalise

    assert matches(pattern, normalise(path) if path else "") is expected


def test_index_and_inject_are_decided_separately() -> None:
    rules = ScopeRules(
        inject_include=("/srv/code/chosen",), index_exclude=("/srv/code/private",), repo_files=False
    )
    assert rules.decide("index", "/srv/code/chosen/app").included
    assert rules.decide("inject", "/srv/code/chosen/app").included
    assert rules.decide("index", "/srv/code/other").included  # index everything...
    assert not rules.decide("inject", "/srv/code/other").included  # ...but inject only where chosen
    private = rules.decide("index", "/srv/code/private/x")
    assert not private.included and private.reason == "excluded by scope: index_exclude '/srv/code/private'"
    assert not rules.decide("inject", "").included  # an include list and no directory: not matched


def test_exclude_beats_include_and_the_marker_beats_everything() -> None:
    rules = ScopeRules(index_include=("/srv/code",), index_exclude=("*-private",), repo_files=False)
    assert not rules.decide("index", "/srv/code/app-private/src").included
    assert rules.decide("index", "/srv/code/app").included
    marked = rules.decide("index", "/srv/code/app", ["fix the cart", f"this one is personal {SKIP_MARKER}"])
    assert not marked.included and SKIP_MARKER in marked.reason
    assert rules.decide("inject", "/srv/code/app", [SKIP_MARKER]).included  # the marker is about indexing
    assert rules.decide("index", "/srv/code/app", ["no-episodic:skipper here"]).included  # a whole token only


def test_the_repository_file_decides_for_its_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg" / "mod").mkdir(parents=True)
    (repo / ".episodic").write_text("index = false\ninject = true\n")
    rules = ScopeRules(inject_include=("/nowhere",))
    index, inject = (
        rules.decide("index", str(repo / "pkg" / "mod")),
        rules.decide("inject", str(repo / "pkg")),
    )
    assert not index.included and index.reason.endswith(f"{repo / '.episodic'} (index = false)")
    assert inject.included and "inject = true" in inject.reason  # opts the repository in
    # a configured exclude still wins over a file saying true (the user's own rule is the stricter)
    assert not ScopeRules(inject_exclude=(str(repo),)).decide("inject", str(repo)).included
    (repo / ".episodic").write_text("index = 'maybe'\n")
    broken = ScopeRules().decide("index", str(repo))
    assert not broken.included and "must be true or false" in broken.reason  # unreadable: excluded


def test_a_folder_named_episodic_is_not_a_repository_file(tmp_path: Path) -> None:
    (tmp_path / ".episodic").mkdir()  # the default home folder, ~/.episodic
    (tmp_path / "proj").mkdir()
    assert ScopeRules().decide("index", str(tmp_path / "proj")).reason == "no rule excludes it"


def test_rules_come_from_the_environment_and_the_config_file(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (episodic_home / "config.toml").write_text('index_exclude = ["~/private", "secret-*"]\n')
    monkeypatch.setenv("EPISODIC_INJECT_INCLUDE", "/srv/code/a, /srv/code/b")
    settings = load_settings()
    assert settings.index_exclude == ["~/private", "secret-*"]
    assert settings.inject_include == ["/srv/code/a", "/srv/code/b"]


def _projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    write_session(
        root / "-work-shop",
        "aaaa0000-0000-4000-8000-000000000001",
        failing_runs=1,
        verified=True,
        cwd="/srv/code/shop",
    )
    write_session(
        root / "-work-secret-x",
        "bbbb0000-0000-4000-8000-000000000002",
        failing_runs=1,
        verified=True,
        cwd="/srv/code/secret-x",
    )
    return root


def test_index_skips_excluded_projects_and_says_which_rule(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_INDEX_EXCLUDE", "secret-*")
    root = _projects(tmp_path)
    result = CliRunner().invoke(build_cli(), ["index", str(root), "--json"])
    report = json.loads(result.output)
    assert report["indexed"] == 1
    assert report["skipped"] == {"excluded by scope: index_exclude 'secret-*'": 1}
    projects = {p["cwd"]: p for p in report["scope"]["projects"]}
    assert projects["/srv/code/secret-x"]["index"]["included"] is False
    assert projects["/srv/code/shop"]["index"]["included"] is True
    text = CliRunner().invoke(build_cli(), ["index", str(root)]).output
    assert "scope rules: index_exclude secret-*" in text
    assert "/srv/code/secret-x (1 session): index no (index_exclude 'secret-*')" in text


def test_inspect_and_doctor_show_the_rules(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_INJECT_EXCLUDE", "/srv/code/shop")
    root = _projects(tmp_path)
    data = json.loads(CliRunner().invoke(build_cli(), ["inspect", str(root), "--json"]).output)
    projects = {p["cwd"]: p for p in data["scope"]["projects"]}
    assert projects["/srv/code/shop"]["inject"] == {
        "included": False,
        "reason": "inject_exclude '/srv/code/shop'",
    }
    assert data["episodes"] == 2  # injection rules do not change what is remembered
    text = CliRunner().invoke(build_cli(), ["inspect", str(root)]).output
    assert "/srv/code/shop (1 session): index yes" in text and "inject no" in text
    check = doctor.check_scope(load_settings(), "/srv/code/shop/api")
    assert check.status == "ok" and "inject_exclude /srv/code/shop" in check.detail
    assert (
        "/srv/code/shop/api: index yes (no rule excludes it), inject no (inject_exclude '/srv/code/shop')"
        in check.detail
    )
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / ".episodic").write_text("[not toml")
    warned = doctor.check_scope(load_settings(), str(bad))
    assert warned.status == "warn" and "not valid TOML" in warned.detail and ".episodic" in warned.fix


def test_an_agent_cannot_record_a_card_for_an_excluded_session(tmp_path: Path) -> None:
    import shutil

    from episodic.assembly import build_memory
    from episodic.cards.agent import record_agent_card
    from episodic.embed.hashing import HashingEmbedder
    from episodic.kernel.errors import InvalidArgumentError

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "projects"
    user = tmp_path / "user-home"
    shutil.copytree(fixtures, user / ".claude" / "projects")
    settings = load_settings(
        home=tmp_path / "home",
        embedder="hashing",
        user_home=str(user),
        claude_config_dir=str(user / ".claude"),
        index_exclude=["*"],
    )
    memory = build_memory(settings, embedder=HashingEmbedder(settings.hashing_dimension))
    payload = {
        "problem": "the settings page showed a stale plan name after upgrading the subscription",
        "steps": ["invalidated the cached plan when the billing webhook arrives"],
        "key_decisions": [],
        "insight": "the plan name was cached for the whole browser session",
        "dead_ends": [],
        "misleading_intuitions": [],
        "critical_checks": [],
        "outcome": "verified",
        "tags": ["caching"],
    }
    with pytest.raises(InvalidArgumentError, match="is not remembered: excluded by scope: index_exclude"):
        record_agent_card(memory, "local", "11111111-1111-4111-8111-111111111111", payload)
    assert memory.store.get("local", "11111111-1111-4111-8111-111111111111") is None


def test_a_rule_added_later_forgets_the_projects_cards(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.assembly import build_store

    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    root = _projects(tmp_path)
    first = json.loads(CliRunner().invoke(build_cli(), ["index", str(root), "--json"]).output)
    assert first["indexed"] == 2 and first["scope"]["forgotten"] == []
    from episodic.assembly import build_history

    indexed_history = build_history(load_settings())
    assert indexed_history is not None and indexed_history.count("local") == 2
    monkeypatch.setenv("EPISODIC_INDEX_EXCLUDE", "/srv/code/secret-x")
    text = CliRunner().invoke(build_cli(), ["index", str(root)]).output
    assert "forgot 1 session(s) the rules now exclude" in text
    store = build_store(load_settings())
    assert [r.session_id for r in store.iter_records("local")] == ["aaaa0000-0000-4000-8000-000000000001"]
    # its history record (prompts in full) and links are forgotten with the card
    from episodic.history.models import HistoryFilters

    history = build_history(load_settings())
    assert history is not None
    kept = [r.session_id for r in history.sessions("local", HistoryFilters())]
    assert kept == ["aaaa0000-0000-4000-8000-000000000001"]
