"""A new user's first steps, through the installed `episodic` in a fresh HOME (the venv off PATH), with the
stand-in `claude` (tests/fixtures/fake_claude) where Claude Code is on PATH: the distiller setup chooses and
says so, `--distiller heuristic` opting out without leaving empty hook arrays, an index whose distils all
fail, a session no model answered, `serve` beside a running server, and Gemini's folder-trust step."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, bare_env, free_port, index_and_set_up, stop_spawned_server
from kits.fake_claude_kit import install_fake

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOT_LOGGED_IN = FIXTURES / "agents" / "claude-2.1.332-not-logged-in.jsonl"
NOT_LOGGED_IN_ID = "df8595cd-5adb-4f29-a256-6e1f495475dc"


class User:
    """A fresh HOME and episodic home (hashing embedder, no background server), `claude` on PATH or not."""

    def __init__(self, tmp: Path, claude: bool = True, scenario: str = "valid") -> None:
        self.home, self.user_home = tmp / "episodic-home", tmp / "user-home"
        self.home.mkdir()
        self.user_home.mkdir()
        (self.home / "config.toml").write_text(
            f'embedder = "hashing"\nport = {free_port()}\nhook_autostart = false\n'
        )
        self.env = bare_env(self.home, self.user_home, FAKE_CLAUDE_SCENARIO=scenario)
        if claude:
            self.env["PATH"] = f"{install_fake(tmp / 'bin').parent}:{self.env['PATH']}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return warm_cli.run([str(EPISODIC), *args], env=self.env, capture_output=True, text=True, timeout=300)

    def hooks(self) -> dict:
        return json.loads((self.user_home / ".claude" / "settings.json").read_text())["hooks"]


def _no_empty_lists(value: object) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_no_empty_lists(v) for v in value)
    if isinstance(value, dict):
        return all(_no_empty_lists(v) for v in value.values())
    return True


def _one_line_per_file(stdout: str) -> None:
    paths = [line.split()[1] for line in stdout.splitlines() if line.startswith(("updated ", "unchanged "))]
    assert paths and len(paths) == len(set(paths)), stdout


def test_setup_makes_a_logged_in_claude_code_the_distiller_and_heuristic_opts_out(tmp_path: Path) -> None:
    user = User(tmp_path)
    assert user.run("index", str(DEMO)).returncode == 0

    printed = user.run("setup", "claude-code")  # no --write: says what it would do, writes nothing
    assert "# distiller: claude-code (saved by --write)" in printed.stdout
    assert not (user.user_home / ".claude").exists()

    chosen = user.run("setup", "claude-code", "--write")
    assert chosen.returncode == 0, chosen.stderr
    assert "distiller: claude-code (saved in" in chosen.stdout
    said = " ".join(chosen.stdout.split())
    assert "Claude Code is on PATH and logged in (api_key)" in said
    assert "the 6 heuristic cards indexed so far" in said and "at most 20 a day" in said
    assert "--distiller heuristic --write` opts out" in said
    assert 'distiller = "claude-code"' in (user.home / "config.toml").read_text()
    assert "hook session-distill" in json.dumps(user.hooks()["SessionEnd"])
    _one_line_per_file(chosen.stdout)

    out = user.run("setup", "claude-code", "--distiller", "heuristic", "--write")
    assert out.returncode == 0, out.stderr
    assert "distiller: heuristic (saved in" in out.stdout
    hooks = user.hooks()  # the ended session still gets its card, the heuristic one
    assert "hook session-distill" in json.dumps(hooks["SessionEnd"]) and _no_empty_lists(hooks), hooks
    _one_line_per_file(out.stdout)

    again = user.run("setup", "claude-code", "--write")  # the saved choice holds
    assert "distiller: heuristic (as configured)" in again.stdout
    assert len(user.hooks()["SessionEnd"]) == 1
    assert all(line.startswith("unchanged") for line in again.stdout.splitlines()[:2]), again.stdout


def test_a_claude_code_that_is_not_logged_in_is_not_made_the_distiller(tmp_path: Path) -> None:
    user = User(tmp_path, scenario="not-logged-in")
    done = user.run("setup", "claude-code", "--write")
    assert done.returncode == 0, done.stderr
    assert "distiller: heuristic (the default)" in done.stdout
    said = " ".join(done.stderr.split())
    assert "Claude Code is on PATH, but not logged in (run `claude` once to log in" in said, said
    assert "Log in, then run `episodic setup claude-code --write` again" in said
    assert "distiller" not in (user.home / "config.toml").read_text()
    assert "hook session-distill" in json.dumps(user.hooks()["SessionEnd"])  # the heuristic card, at the end


def test_an_index_whose_distils_all_fail_exits_1_with_one_line(tmp_path: Path) -> None:
    user = User(tmp_path, scenario="not-logged-in")
    done = user.run("index", str(DEMO), "--distiller", "claude-code")
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if "not logged in" in line]
    assert len(failed) == 1 and "failed 6 sessions" in failed[0], done.stdout
    assert "failed 6" in done.stdout.splitlines()[0]


def test_a_session_no_model_answered_is_skipped_and_not_measured(tmp_path: Path) -> None:
    user = User(tmp_path, claude=False)
    projects = tmp_path / "projects" / "-home-dev-proj"
    projects.mkdir(parents=True)
    shutil.copy(NOT_LOGGED_IN, projects / f"{NOT_LOGGED_IN_ID}.jsonl")
    log = user.home / "experiment" / "log.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(
        json.dumps({"at": "2026-12-02T15:42:07Z", "session_id": NOT_LOGGED_IN_ID, "arm": "with"}) + "\n"
    )

    done = user.run("index", str(tmp_path / "projects"))
    assert done.returncode == 0, done.stderr
    assert "indexed 0" in done.stdout and "skipped 1: no-model-turn" in done.stdout, done.stdout

    report = user.run("experiment", "report", "--json", "--transcripts", str(tmp_path / "projects"))
    assert report.returncode == 0, report.stderr
    sessions = json.loads(report.stdout)["sessions"]
    assert sessions["measured"] == {"with": 0, "without": 0} and sessions["unmeasured"] == 1


def test_serve_beside_a_running_server_names_it(tmp_path: Path) -> None:
    home, user_home, port = index_and_set_up(tmp_path)
    try:
        pid = int((home / "serve.pid").read_text())
        env = bare_env(home, user_home)
        twice = subprocess.run([str(EPISODIC), "serve"], env=env, capture_output=True, text=True, timeout=120)
        assert twice.returncode == 1
        said = " ".join(twice.stderr.split())
        assert f"already running at http://127.0.0.1:{port}/mcp (pid {pid}" in said, twice.stderr
        assert "Errno" not in said
        with socket.socket() as other:  # a port another program holds
            other.bind(("127.0.0.1", 0))
            other.listen()
            taken = other.getsockname()[1]
            busy = subprocess.run(
                [str(EPISODIC), "serve", "--port", str(taken)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert (
            busy.returncode == 1 and f"127.0.0.1:{taken} is already in use by another process" in busy.stderr
        )
    finally:
        stop_spawned_server(home)


def test_setup_gemini_names_the_folder_trust_step(tmp_path: Path) -> None:
    user = User(tmp_path, claude=False)
    printed = user.run("setup", "gemini")
    written = user.run("setup", "gemini", "--write")
    for said in (printed.stdout, written.stderr):
        flat = " ".join(said.replace("# ", "").split())
        assert "`gemini mcp list` shows episodic as Disabled" in flat and '"Trust folder"' in flat, said


@pytest.mark.parametrize("distiller", ["heuristic"])
def test_setup_leaves_no_empty_hook_arrays_from_an_older_setup(tmp_path: Path, distiller: str) -> None:
    user = User(tmp_path, claude=False)
    settings = user.user_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"SessionEnd": [], "Stop": [{"hooks": [{"command": "x"}]}]}}))
    done = user.run("setup", "claude-code", "--distiller", distiller, "--write")
    assert done.returncode == 0, done.stderr
    hooks = user.hooks()
    assert len(hooks["SessionEnd"]) == 1 and hooks["Stop"] == [{"hooks": [{"command": "x"}]}]
    _one_line_per_file(done.stdout)


def test_setup_path_links_the_command_into_local_bin_with_consent(tmp_path: Path) -> None:
    user = User(tmp_path, claude=False)
    link = user.user_home / ".local" / "bin" / "episodic"
    printed = user.run("setup", "path")
    assert printed.returncode == 0 and f"ln -sf {EPISODIC} {link}" in printed.stdout
    assert not link.exists()  # only --write changes anything

    done = user.run("setup", "path", "--write")
    assert done.returncode == 0, done.stderr
    assert f"linked {link} -> {EPISODIC}" in done.stdout and link.resolve() == EPISODIC.resolve()
    assert f'export PATH="{link.parent}:$PATH"' in done.stderr  # not on this PATH yet
    called = subprocess.run(
        ["episodic", "doctor", "--json"],
        env={**user.env, "PATH": f"{link.parent}:{user.env['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(called.stdout)[0] == {  # called through the link, it names the venv's own script
        "name": "executable",
        "status": "ok",
        "detail": os.path.realpath(EPISODIC),
        "fix": "",
    }, called.stderr
    assert user.run("setup", "path", "--write").stdout.startswith("unchanged")

    link.unlink()
    link.write_text("someone else's script\n")
    refused = user.run("setup", "path", "--write")
    assert refused.returncode == 1 and "is not a link; nothing was changed" in refused.stderr
    assert link.read_text() == "someone else's script\n"
