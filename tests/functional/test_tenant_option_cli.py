"""A malformed tenant name is a usage error before anything is read (issue 52 item 15): `index --tenant
'../x'` exited 0 with a traceback per session. Every command that takes `--tenant` checks it once, with the
one tenant rule, and says so in one line (exit 2); a configured `tenant` is checked the same way."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import EPISODIC, bare_env
from kits.session_builder import SessionWriter

RULE = (
    "invalid tenant name '../x': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
)


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "episodic-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('embedder = "hashing"\nhook_autostart = false\n')
    full = {**bare_env(home, tmp_path / "user-home"), **env}
    return warm_cli.run([str(EPISODIC), *args], env=full, capture_output=True, text=True, timeout=120)


def test_index_with_a_path_tenant_is_a_usage_error_before_any_session_is_read(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    for n in range(3):
        SessionWriter(f"aaaaaaaa-1111-4111-8111-00000000000{n}", "2026-11-01").prompt(
            "the checkout total is blank"
        ).reply("fixed").write(sessions)
    done = _run(tmp_path, "index", "--tenant", "../x", str(sessions))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr == f"Error: Invalid value for '--tenant': {RULE}\n"
    assert done.stdout == ""
    home = tmp_path / "episodic-home"
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]  # nothing read, nothing written
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["search", "checkout"],
        ["show", "abcdef"],
        ["demo", "remove"],
        ["inspect"],
        ["cards", "export", "out"],
        ["history", "search", "checkout"],
        ["dream"],
        ["scratch", "recall", "checkout"],
        ["token", "add"],
        ["ui", "--no-open"],
        ["harvest"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_every_command_taking_a_tenant_checks_it_the_same_way(tmp_path: Path, command: list[str]) -> None:
    done = _run(tmp_path, *command, "--tenant", "../x")
    assert (done.returncode, done.stderr) == (2, f"Error: Invalid value for '--tenant': {RULE}\n")


def test_a_configured_tenant_is_checked_by_the_same_rule(tmp_path: Path) -> None:
    done = _run(tmp_path, "stats", EPISODIC_TENANT="../x")
    assert done.returncode == 1 and RULE in done.stderr and "Traceback" not in done.stderr
