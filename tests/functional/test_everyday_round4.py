"""What a newcomer meets on their own sessions, each through the CLI or the hook as they run it: a list of
weak hits is headed by what it is, a label says what decided it, `show` says why its outcome is what it is,
setup names an agent that is not installed, quickstart asks a question of the user's own sessions, input
problems are said, and the small things (readable times, an empty index, one backup, the Gemini project)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, DemoIndexed, bare_env, episodic, free_port, index_demo, isolate
from kits.fake_claude_kit import install_fake

CONFIG = 'embedder = "hashing"\ndistiller = "heuristic"\n'
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
GEMINI_HOME = FIXTURES / "gemini-0.61-home" / ".gemini"
CODEX_ROLLOUT = FIXTURES / "codex-0.171-answered-rollout.jsonl"
DEADLOCK = "3257c428-c6d6-59f5-bb39-a192237608cc"  # the demo's verified Go deadlock session
INFORMATIONAL = "623b4640"  # the demo's useMemo question: no fix was made
DEMO_QUESTION = "npm run check passes locally but the GitHub Actions job fails with lint errors"
# a model turn after the fixture's prompt (the offline Gemini run has none, so it would not be an episode)
GEMINI_ANSWER = {
    "id": "m2",
    "timestamp": "2026-12-01T13:41:03.226Z",
    "type": "gemini",
    "content": "I ran pytest -q: test_due_date failed because the clock was not UTC. Fixed it; pytest passes now.",
}


@pytest.fixture(scope="module")
def demo_indexed(tmp_path_factory: pytest.TempPathFactory) -> DemoIndexed:
    return index_demo(tmp_path_factory.mktemp("round4"), CONFIG)


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


def _user_home() -> Path:
    import os

    return Path(os.environ["HOME"])


def _gemini_home(user_home: Path, registry: bool = True) -> Path:
    """The real Gemini CLI 0.61 session (with one model turn added); without its projects.json entry when
    `registry` is off."""
    shutil.copytree(GEMINI_HOME, user_home / ".gemini")
    if not registry:
        (user_home / ".gemini" / "projects.json").unlink()
    chat = next((user_home / ".gemini" / "tmp" / "proj" / "chats").glob("session-*.jsonl"))
    with chat.open("a") as handle:
        handle.write(json.dumps(GEMINI_ANSWER) + "\n")
    return chat


def _bare(tmp: Path, config: str = "") -> tuple[Path, Path, dict[str, str]]:
    """A fresh HOME and episodic home, the venv and every agent's CLI off PATH."""
    home, user_home = tmp / "episodic-home", tmp / "user-home"
    home.mkdir()
    user_home.mkdir()
    (home / "config.toml").write_text(
        f'embedder = "hashing"\nport = {free_port()}\nhook_autostart = false\n{config}'
    )
    env = bare_env(home, user_home)
    env["PATH"] = ":".join(
        p for p in env["PATH"].split(":") if not any(Path(p, c).exists() for c in AGENT_CLIS)
    )
    return home, user_home, env


AGENT_CLIS = ("claude", "codex", "gemini")


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return warm_cli.run([str(EPISODIC), *args], env=env, capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------- 2. what heads a list


def test_weak_hits_are_headed_as_possible_matches_and_no_match_is_only_an_empty_answer(
    demo_home: Path,
) -> None:
    found = json.loads(episodic("search", "lint errors on CI", "--json").stdout)["results"]
    assert found and all(hit["confidence"] != "strong" for hit in found)  # weak or faint only
    listed = episodic("search", "lint errors on CI")
    assert listed.stdout.startswith("Possible matches, none close, best first"), listed.stdout
    assert "No confident match" not in listed.stdout and "[1] (weak match" in listed.stdout
    nothing = episodic("search", "banana bread recipe oven temperature")
    assert nothing.stdout.strip() == "No confident match."


# ---------------------------------------------------------------- 3. what decided a label


def test_a_close_episode_that_was_never_verified_says_its_outcome_decided_the_label(demo_home: Path) -> None:
    query = "What's the difference between useMemo and useCallback, when should I use each"
    every = json.loads(episodic("search", query, "--all-outcomes", "--json").stdout)["results"]
    close = [hit for hit in every if hit["session_id"].startswith(INFORMATIONAL)]
    assert close and close[0]["confidence"] == "strong"  # close by the numbers
    printed = episodic("search", query).stdout
    line = next(x for x in printed.splitlines() if x.startswith("[") and INFORMATIONAL in x)
    assert "(close, but informational: a lead, not a fix)" in line, line
    assert "[informational: no fix was made" in line


def test_show_says_why_its_outcome_is_what_it_is_and_when_in_plain_time(demo_home: Path) -> None:
    shown = episodic("show", DEADLOCK[:8])
    assert shown.returncode == 0, shown.stderr
    assert "Why verified: last edit: Edit " in shown.stdout and "pool.go" in shown.stdout
    assert "- after it, check passed: go test" in shown.stdout
    assert re.search(r"^Indexed: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", shown.stdout, re.M), shown.stdout
    assert "Started: 2026-02-16 16:20:20 UTC" in shown.stdout
    assert not re.search(r"\d\d:\d\d:\d\d\.\d", shown.stdout)  # no microseconds
    inspected = episodic("inspect", str(DEMO))
    assert "date span: 2026-01-12 09:14:20 UTC .. 2026-02-18 11:01:20 UTC" in inspected.stdout


# ---------------------------------------------------------------- 6. an agent that is not installed


@pytest.mark.parametrize(
    ("agent", "label", "binary"),
    [
        ("claude-code", "Claude Code", "claude"),
        ("codex", "Codex CLI", "codex"),
        ("gemini", "Gemini CLI", "gemini"),
    ],
)
def test_setup_for_an_agent_not_installed_says_so_and_what_happens(
    tmp_path: Path, agent: str, label: str, binary: str
) -> None:
    _, _, env = _bare(tmp_path)
    done = _run(env, "setup", agent, "--write")
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert f"{label} is not installed here (no `{binary}` on PATH)" in said, done.stderr
    assert "its configuration is written anyway and takes effect once you install it" in said
    assert "updated " in done.stdout  # written, as said
    plan = _run(env, "setup", agent)
    assert "`--write` writes this configuration anyway" in plan.stderr


def test_doctor_and_stats_on_an_empty_index_say_nothing_is_indexed_yet(tmp_path: Path) -> None:
    _home, _, env = _bare(tmp_path)
    empty = tmp_path / "no-sessions"
    empty.mkdir()
    assert _run(env, "index", str(empty)).returncode == 0  # an index with no card in it
    doctor = _run(env, "doctor")
    assert "[fail] index: nothing indexed yet" in doctor.stdout, doctor.stdout
    assert "no confident match" not in doctor.stdout.lower()
    stats = _run(env, "stats")
    assert stats.stdout.startswith("cards: 0 (nothing indexed yet: `episodic index`)"), stats.stdout
    assert not re.search(r"^  (tenant|outcome|distiller): *$", stats.stdout, re.M), stats.stdout


def test_doctor_runs_the_hook_on_an_empty_index_and_says_nothing_is_indexed_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.kernel.settings import load_settings
    from episodic.mcp.http_server import BackgroundServer, build_endpoint

    home, user_home, env = _bare(tmp_path)
    (tmp_path / "no-sessions").mkdir()
    assert _run(env, "index", str(tmp_path / "no-sessions")).returncode == 0
    assert _run(env, "setup", "claude-code", "--write").returncode == 0  # the hook and its token
    isolate(monkeypatch, home, user_home)
    with BackgroundServer(build_endpoint(load_settings())) as server:  # the server the hook asks
        doctor = _run({**env, "EPISODIC_PORT": str(server.httpd.server_address[1])}, "doctor")
    hook = next(
        line for line in doctor.stdout.splitlines() if line.startswith("[") and "prompt hook:" in line
    )
    assert hook.startswith("[warn] prompt hook: nothing indexed yet: the hook ran and answered"), (
        doctor.stdout
    )
    assert "no confident match" not in doctor.stdout.lower()


def test_doctor_names_the_command_one_way(tmp_path: Path) -> None:
    _, _, env = _bare(tmp_path)
    doctor = _run(env, "doctor")  # the venv is off PATH: the fixes still say `episodic`, and what it means
    fixes = [line for line in doctor.stdout.splitlines() if line.strip().startswith("fix:")]
    assert fixes and not [line for line in fixes if "/bin/episodic" in line], doctor.stdout
    executable = next(line for line in doctor.stdout.splitlines() if "executable:" in line)
    assert "not on PATH: each `episodic` in the fixes below means this path" in executable


# ---------------------------------------------------------------- 7. quickstart asks of your own sessions


def test_quickstart_asks_a_question_drawn_from_your_own_gemini_session(home: Path) -> None:
    _gemini_home(_user_home())
    quick = episodic("quickstart")
    assert quick.returncode == 0, quick.stderr
    assert "Indexing your sessions: Gemini CLI" in quick.stdout and "demo" not in quick.stdout
    assert DEMO_QUESTION not in quick.stdout
    assert "drawn from your session e4c8bcf2, project proj, 2026-12-01" in quick.stdout, quick.stdout
    assert "No confident match" not in quick.stdout and "[1] (" in quick.stdout


def test_quickstart_asks_a_question_drawn_from_your_own_codex_session(home: Path) -> None:
    day = _user_home() / ".codex" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    shutil.copy(CODEX_ROLLOUT, day / CODEX_ROLLOUT.name)
    quick = episodic("quickstart")
    assert quick.returncode == 0, quick.stderr
    assert "Indexing your sessions: Codex CLI" in quick.stdout and DEMO_QUESTION not in quick.stdout
    assert "drawn from your session " in quick.stdout, quick.stdout
    assert "No confident match" not in quick.stdout and "[1] (" in quick.stdout
    asked = episodic("quickstart", "--query", "a question of my own")
    assert 'search: "a question of my own"' in asked.stdout


# ---------------------------------------------------------------- 10. input problems said


def test_a_transcript_cut_mid_line_is_reported(home: Path, tmp_path: Path) -> None:
    whole = next((DEMO / "home-dev-cli-tool").glob("*.jsonl"))
    cut = tmp_path / "sessions" / whole.name
    cut.parent.mkdir()
    cut.write_bytes(whole.read_bytes()[:-40])  # the last line loses its end, as a live file being written
    done = episodic("index", str(cut.parent))
    assert done.returncode == 0, done.stderr
    assert "indexed 1" in done.stdout and "1 file cut mid-line" in done.stdout, done.stdout
    as_json = json.loads(episodic("index", str(cut.parent), "--json").stdout)
    assert as_json["cut_last_lines"] == 1


def test_indexing_a_file_that_is_no_session_says_so(home: Path) -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    done = episodic("index", str(readme))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{readme} is not a session" in done.stderr and "Gemini CLI chat (not JSON" in done.stderr
    mixed = episodic("index", str(readme), str(next((DEMO / "home-dev-cli-tool").glob("*.jsonl"))))
    assert mixed.returncode == 0 and "indexed 1" in mixed.stdout
    assert f"skipped: {readme} is not a session" in mixed.stderr


def test_a_bad_port_in_the_config_is_logged_by_the_hook_as_a_config_error(tmp_path: Path) -> None:
    home, _, env = _bare(tmp_path)
    (home / "config.toml").write_text('port = 99999\ntoken = "epi_x"\n')
    payload = json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why does the lint step fail on CI but pass on my laptop",
            "session_id": "s",
        }
    )
    done = warm_cli.run(
        [str(EPISODIC), "hook", "user-prompt-submit"],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # fails open
    logged = (home / "logs" / "hook.log").read_text()
    assert "fail: config file: `port` in " in logged and "is 99999, not a port number (1-65535)" in logged, (
        logged
    )
    assert "unreachable" not in logged


# ---------------------------------------------------------------- 12. small things


def test_setup_gemini_writes_settings_once_and_its_backup_is_the_original(tmp_path: Path) -> None:
    _, user_home, env = _bare(tmp_path)
    settings = user_home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "dark"}\n')
    done = _run(env, "setup", "gemini", "--write")
    assert done.returncode == 0, done.stderr
    backups = list(settings.parent.glob("settings.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == {"theme": "dark"}, backups
    written = json.loads(settings.read_text())
    assert written["theme"] == "dark" and "episodic" in written["mcpServers"] and written["hooks"]
    assert [line for line in done.stdout.splitlines() if line.startswith("updated ")] == [
        line for line in done.stdout.splitlines() if str(settings) in line
    ]


def test_a_gemini_session_without_a_projects_json_entry_takes_its_folder_name(home: Path) -> None:
    _gemini_home(_user_home(), registry=False)
    assert episodic("index").returncode == 0
    found = json.loads(episodic("search", "pytest failed because the clock was not UTC", "--json").stdout)
    assert [hit["project"] for hit in found["results"]] == ["proj"]


def test_setup_says_no_minutes_when_there_is_nothing_to_redistil(tmp_path: Path) -> None:
    _, _, env = _bare(tmp_path)
    env["PATH"] = f"{install_fake(tmp_path / 'bin').parent}:{env['PATH']}"  # Claude Code, logged in
    env["FAKE_CLAUDE_SCENARIO"] = "valid"
    done = _run(env, "setup", "claude-code", "--write")
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "about 0 min" not in said and "no heuristic card to re-distil so far" in said, said
