"""Issue 50's everyday frictions, each through the CLI as a user meets it: `show` reads as text, ids resolve
the same everywhere, configuration mistakes get one line, no traceback for a refused address, stale failures
are not "waiting for a retry", and the holdout experiment is visible."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodic.distill.heuristic import HeuristicDistiller
from kits.client_env import DEMO, DemoIndexed, episodic, index_demo, isolate
from kits.fake_claude_kit import install_fake

CONFIG = 'embedder = "hashing"\ndistiller = "heuristic"\n'


@pytest.fixture(scope="module")
def demo_indexed(tmp_path_factory: pytest.TempPathFactory) -> DemoIndexed:
    """One home with the demo corpus indexed on purpose, for the tests that only read it."""
    return index_demo(tmp_path_factory.mktemp("round3"), CONFIG)


@pytest.fixture()
def demo_home(demo_indexed: DemoIndexed, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, done = demo_indexed
    assert done.returncode == 0, done.stderr
    isolate(monkeypatch, home)
    return home


@pytest.fixture()
def home(episodic_home: Path) -> Path:
    (episodic_home / "config.toml").write_text(CONFIG)
    return episodic_home


def _a_demo_session() -> str:
    done = episodic("search", "lint errors on CI", "--all-outcomes", "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["results"][0]["session_id"])


# ---------------------------------------------------------------- 10. show reads as text


def test_show_prints_the_card_as_text_and_json_as_one_document(demo_home: Path) -> None:
    session = _a_demo_session()
    text = episodic("show", session[:8])
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"Episode {session}")
    assert "Problem: " in text.stdout and "Outcome: " in text.stdout and "Distilled by: " in text.stdout
    assert "Review: unreviewed" in text.stdout and "Agent: claude-code" in text.stdout
    assert "{" not in text.stdout.splitlines()[0] and '"card"' not in text.stdout
    as_json = episodic("show", session[:8], "--json")
    document = json.loads(as_json.stdout)  # one document: json.loads refuses two
    assert document["session_id"] == session and document["card"]["problem"]


# ---------------------------------------------------------------- 6. one id, every command


def test_inspect_render_takes_the_id_prefix_show_takes(demo_home: Path) -> None:
    session = _a_demo_session()
    transcript = json.loads(episodic("show", session[:8], "--json").stdout)["source_path"]
    by_path = episodic("inspect", "--render", transcript)
    by_prefix = episodic("inspect", "--render", session[:8])
    assert by_prefix.returncode == 0, by_prefix.stderr
    assert by_prefix.stdout == by_path.stdout and by_prefix.stdout.startswith("SESSION ")
    unknown = episodic("inspect", "--render", "ffffff00")
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr and "ffffff00" in unknown.stderr


# ---------------------------------------------------------------- 7. configuration mistakes


def test_a_bad_config_value_is_one_line_naming_file_key_and_problem(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = home / "config.toml"
    config.write_text(CONFIG + 'port = "abc"\n')
    done = episodic("stats")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"config file {config}" in lines[0] and "port = 'abc'" in lines[0] and "integer" in lines[0]
    assert "pydantic" not in lines[0]  # no validation-library docs URL
    monkeypatch.setenv("EPISODIC_KEYWORD_WEIGHT", "heavy")
    both = episodic("stats")
    assert both.returncode == 1 and len(both.stderr.strip().splitlines()) == 1, both.stderr
    assert "EPISODIC_KEYWORD_WEIGHT = 'heavy'" in both.stderr and "port = 'abc'" in both.stderr


def test_an_unknown_config_key_is_warned_by_every_command_and_doctor(home: Path) -> None:
    config = home / "config.toml"
    config.write_text(CONFIG + "prot = 9000\n")
    done = episodic("stats", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["cards"] == 0
    assert (
        f"warning: config file {config}: unknown key 'prot' is ignored; did you mean 'port'?" in done.stderr
    )
    doctor = json.loads(episodic("doctor", "--json").stdout)
    rows = [row for row in doctor if row["name"] == "config file"]
    assert len(rows) == 1 and rows[0]["status"] == "warn" and "'prot'" in rows[0]["detail"], rows
    assert str(config) in rows[0]["fix"]
    config.write_text(CONFIG)
    assert episodic("stats").stderr == ""


# ---------------------------------------------------------------- 8. no traceback


def test_ui_on_an_address_that_is_not_loopback_is_one_line(home: Path) -> None:
    done = episodic("ui", "--host", "0.0.0.0", "--no-open")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: the viewer binds loopback only, not '0.0.0.0': omit --host (a per-run <random>.localhost name "
        "of its own) or give 127.0.0.1"
    )


# ---------------------------------------------------------------- 11. stale failures


def test_failures_of_a_distiller_no_longer_configured_are_not_waiting_for_a_retry(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert episodic("index", str(DEMO)).returncode == 0  # heuristic cards
    install_fake(tmp_path / "bin")
    with monkeypatch.context() as logged_out:
        logged_out.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
        logged_out.setenv("FAKE_CLAUDE_SCENARIO", "not-logged-in")
        failed = episodic("index", str(DEMO), "--distiller", "claude-code", "--json")
    assert len(json.loads(failed.stdout)["failed"]) == 6, failed.stdout + failed.stderr
    # back on the heuristic (the config file's): every session kept its heuristic card, nothing will retry
    stats = episodic("stats")
    assert "failures waiting for a retry: 0" in stats.stdout, stats.stdout
    assert "earlier failures not retried by the heuristic distiller: 6" in stats.stdout
    settled = json.loads(episodic("stats", "--json").stdout)
    assert settled["failures"] == [] and {f["card_by"] for f in settled["settled_failures"]} == {
        HeuristicDistiller.info.id
    }
    again = json.loads(episodic("index", str(DEMO), "--json").stdout)
    assert again["unchanged"] == 6
    after = json.loads(episodic("stats", "--json").stdout)
    assert after["failures"] == [] and after["settled_failures"] == []  # the index forgot them


# ---------------------------------------------------------------- 9. the holdout experiment is visible

README = Path(__file__).resolve().parents[2] / "README.md"


def test_doctor_and_the_readme_say_the_holdout_experiment_is_on_and_how_to_turn_it_off(home: Path) -> None:
    rows = {row["name"]: row for row in json.loads(episodic("doctor", "--json").stdout)}
    detail = rows["experiment"]["detail"]
    assert detail.startswith("on (the default): 1 session in 10 gets no memory"), detail
    assert "`experiment_enabled = false`" in detail
    hook_section = README.read_text().split("**The prompt hook**", 1)[1].split("\n## ", 1)[0]
    assert "holdout experiment is on by default" in hook_section
    assert "experiment_enabled = false" in hook_section
    (home / "config.toml").write_text(CONFIG + "experiment_enabled = false\n")
    rows = {row["name"]: row for row in json.loads(episodic("doctor", "--json").stdout)}
    assert rows["experiment"]["detail"] == "off: every eligible prompt gets memory"


# ---------------------------------------------------------------- 14. small things

REPO = README.parent


def test_one_session_is_one_session(home: Path, tmp_path: Path) -> None:
    one = tmp_path / "one"
    one.mkdir()
    first = sorted((DEMO / "home-dev-cli-tool").glob("*.jsonl"))[0]
    (one / first.name).write_bytes(first.read_bytes())
    done = episodic("index", str(one))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("found 1 session: indexed 1"), done.stdout


def _code_blocks(text: str) -> list[str]:
    return [block.split("\n", 1)[1].strip() for block in text.split("```")[1::2]]


def test_the_readme_opens_with_the_users_command_and_explains_its_words_before_using_them() -> None:
    text = README.read_text()
    blocks = _code_blocks(text)
    assert blocks[0] == "./scripts/install && .venv/bin/episodic quickstart"  # the user's first screen
    tests_section = text.split("\n## Run the tests\n", 1)[1].split("\n## ", 1)[0]
    test_command = "./scripts/install --dev && .venv/bin/python -m pytest"  # .ci/run's
    assert blocks[1] == _code_blocks(tests_section)[0] == test_command  # second, labelled for developers
    assert text.index("To use it") < text.index(blocks[0]) < text.index("To work on it")
    for word in ("tenant", "distiller"):  # the first use is where the word is explained
        assert text.lower().index(word) == text.index(f"*{word}*") + 1, word
    assert text.index("scope rules") == text.index("[scope rules](docs/scope.md) (what is indexed") + 1
    assert (REPO / "docs" / "index.md").read_text() == text.replace(
        "](docs/", "]("
    )  # the site's home is the README


def test_the_readme_docs_build_prints_no_end_of_life_banner(tmp_path: Path) -> None:
    command = next(b for b in _code_blocks(README.read_text()) if "mkdocs build" in b).split("#")[0].strip()
    command = command.replace(".venv/bin/", f"{Path(sys.executable).parent}/")  # this checkout's venv
    done = subprocess.run(
        f"{command} --site-dir {tmp_path / 'site'}",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "NO_MKDOCS_2_WARNING"},
    )
    assert done.returncode == 0, done.stderr
    assert "end of life" not in done.stderr and (tmp_path / "site" / "index.html").is_file()


def test_the_viewer_docs_give_the_address_it_prints() -> None:
    viewer = (REPO / "docs" / "viewer.md").read_text()
    assert "opens http://<random>.localhost:<port>/" in viewer and "opens http://127.0.0.1" not in viewer
