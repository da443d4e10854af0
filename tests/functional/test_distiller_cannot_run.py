"""An agent CLI that cannot distil (logged out): `setup … --distiller <agent> --write` exits 1 before writing
anything, and `setup`, `doctor` and `index` give one and the same reason for that state (issue 50, item 4).
Through the installed `episodic` in a fresh HOME, with the stand-in `claude` / `gemini` on PATH."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, bare_env, free_port
from kits.fake_claude_kit import install_fake, install_fake_agent

REASONS = {
    "claude-code": "Claude Code is not logged in (run `claude` once to log in, or set ANTHROPIC_API_KEY)",
    "gemini": "Gemini CLI is not logged in (no sign-in method in ",
}
SIGN_IN = ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_GCA", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL")


def _user(tmp: Path, agent: str) -> tuple[Path, Path, dict[str, str]]:
    home, user_home = tmp / "episodic-home", tmp / "user-home"
    home.mkdir()
    user_home.mkdir()
    (home / "config.toml").write_text(f'embedder = "hashing"\nport = {free_port()}\nhook_autostart = false\n')
    env = bare_env(home, user_home, FAKE_CLAUDE_SCENARIO="not-logged-in")
    for name in SIGN_IN:
        env.pop(name, None)
    launcher = install_fake(tmp / "bin") if agent == "claude-code" else install_fake_agent(tmp / "bin", agent)
    env["PATH"] = f"{launcher.parent}:{env['PATH']}"
    return home, user_home, env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return warm_cli.run([str(EPISODIC), *args], env=env, capture_output=True, text=True, timeout=300)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_a_logged_out_agent_is_refused_by_setup_with_the_reason_doctor_and_index_give(
    agent: str, tmp_path: Path
) -> None:
    home, user_home, env = _user(tmp_path, agent)
    before = {"home": _files(home), "user": _files(user_home)}
    refused = _run(env, "setup", agent, "--distiller", agent, "--write")
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert REASONS[agent] in said and "Nothing was written" in said, said
    assert {"home": _files(home), "user": _files(user_home)} == before  # no config, no hook, no MCP entry

    env["EPISODIC_DISTILLER"] = agent  # chosen anyway (by hand): doctor and index say the same reason
    doctor = _run(env, "doctor")
    line = next(x for x in doctor.stdout.splitlines() if "] distiller:" in x)
    assert line.startswith("[fail]") and REASONS[agent] in line, doctor.stdout
    index = _run(env, "index", str(DEMO))
    assert index.returncode == 1
    assert REASONS[agent] in " ".join(index.stdout.split()), index.stdout + index.stderr
    assert "ignores settings files" not in index.stdout + index.stderr + doctor.stdout
