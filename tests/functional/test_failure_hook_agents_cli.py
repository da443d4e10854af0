"""Recall at the moment of failure with the real Codex CLI (0.171, `PostToolUse`) and Gemini CLI (0.61,
`AfterTool`), offline: a loopback stand-in for each model API (tests/kits/fake_agent_models_kit.py) makes the real CLI
run one shell command; the hook `episodic setup codex|gemini --write` registered answers, and what reaches the
model's next request is read off the fake: the fix of the indexed session that met the same error (another path,
another line), nothing for an error no session met, nothing for a command that succeeded. Skipped when a CLI
is absent (`scripts/install --dev` puts them under .tools/)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.kernel.models import Trajectory
from kits.client_env import bare_env, stop_spawned_server, wait_for_port
from kits.fake_agent_models_kit import fake_agent_model
from test_failure_hook_cli import FIXED_SESSION, set_up_user

REPO_ROOT = Path(__file__).resolve().parents[2]
CODEX = Path(
    os.environ.get("EPISODIC_TEST_CODEX", REPO_ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex")
)
GEMINI = Path(
    os.environ.get(
        "EPISODIC_TEST_GEMINI", REPO_ROOT / ".tools" / "gemini" / "node_modules" / ".bin" / "gemini"
    )
)
BUDGET = {"EPISODIC_HOOK_BUDGET_SECONDS": "50"}  # what reaches the model, not how fast
MARK = "<episodic-memory-context"


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """An index holding the session that got past `undefined: regexp`; `setup codex|gemini --write` run."""
    if not (CODEX.exists() or GEMINI.exists()):
        pytest.skip(f"neither {CODEX} nor {GEMINI} is installed (scripts/install --dev)")
    tmp = tmp_path_factory.mktemp("failure-agents")
    try:
        # setup trusts its Codex hook through this `codex app-server` (an untrusted hook never runs)
        # (the prompt and session-end hooks setup also registers: tests/functional/test_agent_moments_cli.py)
        config = f"codex_binary = {json.dumps(str(CODEX))}\nhook_session_end = false\n"
        home, user_home, tools = set_up_user(
            tmp, ["setup", "codex", "--write"], ["setup", "gemini", "--write"], config=config
        )
        # setup left the local server answering (as `setup claude-code --write` does)
        wait_for_port(int((home / "config.toml").read_text().split("port = ")[1].split()[0]))
        yield home, user_home, tools
    finally:
        stop_spawned_server(tmp / "episodic-home")


def _hook_log(home: Path) -> list[str]:
    log = home / "logs" / "hook.log"
    return (
        [line for line in log.read_text().splitlines() if "post-tool-failure" in line] if log.exists() else []
    )


# ---------------------------------------------------------------- Codex


def _codex_home(user_home: Path, base_url: str) -> Path:
    """What setup wrote (the hook and its trust), plus the fake model provider. The hook keeps setup's 5 s
    timeout: a changed hook would be untrusted again (the hook took under 0.5 s at load 8 here)."""
    codex_home = user_home / ".codex"
    written = codex_home / "config.toml.setup"  # what setup wrote, kept before the first change
    if not written.exists():
        written.write_text((codex_home / "config.toml").read_text())
    (codex_home / "config.toml").write_text(
        'model = "gpt-fake"\nmodel_provider = "fake"\n'  # top-level keys before the first table
        + written.read_text()
        + f'\n[model_providers.fake]\nname = "fake"\nbase_url = "{base_url}/v1"\nwire_api = "responses"\n'
        'env_key = "OPENAI_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )
    return codex_home


def run_codex(
    home: Path, user_home: Path, tools: Path, prompt: str, command: str, budget: dict[str, str] = BUDGET
) -> list[dict]:
    """The real `codex exec PROMPT` once, the fake model asking for `command`; every model request's body."""
    with fake_agent_model(command) as fake:
        codex_home = _codex_home(user_home, fake.base_url)
        env = bare_env(
            home, user_home, **budget, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-test-not-real"
        )
        env["PATH"] = f"{tools}:{env['PATH']}"
        done = subprocess.run(
            # no hook-trust bypass: setup trusted the hook; the sandbox (bubblewrap) is not what is under test
            [str(CODEX), "exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox",
             prompt],
            env=env,
            cwd=user_home / "project",
            capture_output=True,
            text=True,
            timeout=240,
        )  # fmt: skip
        requests = [r["body"] for r in fake.requests if r["path"].endswith("/responses")]
    assert done.returncode == 0 and requests, done.stdout[-2000:] + done.stderr[-2000:]
    return requests


def codex_last_request(home: Path, user_home: Path, tools: Path, command: str) -> list[dict]:
    """Run the real `codex exec` once; the `input` of the model request after the command ran."""
    requests = run_codex(home, user_home, tools, "run the build", command)
    assert len(requests) == 2, requests
    assert any(item.get("type") == "function_call_output" for item in requests[1]["input"])
    return list(requests[1]["input"])


@pytest.mark.skipif(not CODEX.exists(), reason=f"Codex CLI not installed at {CODEX}")
def test_codex_gets_the_fix_of_an_error_an_indexed_session_got_past(user: tuple[Path, Path, Path]) -> None:
    from episodic.cli.doctor_agents import codex_row
    from episodic.kernel.settings import load_settings

    home, user_home, tools = user
    # doctor finds the trust entry setup wrote through the real app-server, under the key Codex gave it
    settings = load_settings(home=home, user_home=str(user_home), codex_home=str(user_home / ".codex"))
    assert (codex_row(settings) or ("", "", ""))[1:2] == ("ok",), codex_row(settings)
    items = codex_last_request(home, user_home, tools, "go test ./...")
    injected = [
        part["text"]
        for item in items
        if item.get("type") == "message" and item.get("role") == "developer"
        for part in item.get("content") or []
        if MARK in part.get("text", "")
    ]
    assert len(injected) == 1, _hook_log(home)[-3:]
    context = injected[0]
    assert "undefined: regexp" in context and "regexp import was removed" in context
    assert f"Session {FIXED_SESSION} of 2026-02-15" in context and "`go test ./...` passed" in context
    assert "post-tool-failure ok: injected the fix of an earlier session" in _hook_log(home)[-1]


# ---------------------------------------------------------------- Gemini CLI


def _gemini_settings(user_home: Path) -> None:
    """What setup wrote, plus the API-key sign-in the fake takes; the hooks' timeouts raised (milliseconds)."""
    path = user_home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    for groups in settings["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["timeout"] = 60_000
    settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    path.write_text(json.dumps(settings))


def run_gemini(
    home: Path, user_home: Path, tools: Path, prompt: str, command: str, budget: dict[str, str] = BUDGET
) -> list[dict]:
    """The real `gemini -p PROMPT` once, the fake model asking for `command`; every model request's body."""
    _gemini_settings(user_home)
    with fake_agent_model(command) as fake:
        env = bare_env(
            home,
            user_home,
            **budget,
            GEMINI_API_KEY="fake-key-not-real",
            GOOGLE_GEMINI_BASE_URL=fake.base_url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
            # what the CLI sets for the copy of itself it starts with a larger heap: one node start, not two
            GEMINI_CLI_NO_RELAUNCH="true",
        )
        env["PATH"] = f"{tools}:{env['PATH']}"
        done = subprocess.run(
            # a fixed model: "auto" would first ask a classifier model for a route
            [str(GEMINI), "-p", prompt, "--approval-mode", "yolo", "--model", "gemini-2.5-pro",
             "--output-format", "json"],
            env=env,
            cwd=user_home / "project",
            capture_output=True,
            text=True,
            timeout=240,
        )  # fmt: skip
        requests = [r["body"] for r in fake.requests if r["path"].endswith(":streamGenerateContent")]
    assert done.returncode == 0 and requests, done.stdout[-2000:] + done.stderr[-2000:]
    return requests


def gemini_last_request(home: Path, user_home: Path, tools: Path, command: str) -> list[dict]:
    """Run the real `gemini -p` once; the `contents` of the model request after the command ran."""
    requests = run_gemini(home, user_home, tools, "run the build", command)
    assert len(requests) == 2, requests
    return list(requests[1]["contents"])


def _gemini_sessions(user_home: Path) -> list[tuple[Trajectory, str]]:
    from episodic.parse.gemini import GeminiSource
    from episodic.scrub import default_scrubber

    source = GeminiSource(default_scrubber(), roots=[user_home / ".gemini" / "tmp"])
    loaded = []
    for found in source.discover([]):
        trajectory = source.load(found)
        if isinstance(trajectory, Trajectory):
            loaded.append((trajectory, Path(found.main_path).read_text()))
    return loaded


def _function_response(contents: list[dict]) -> str:
    (output,) = [
        part["functionResponse"]["response"]["output"]
        for content in contents
        for part in content.get("parts") or []
        if "functionResponse" in part
    ]
    return str(output)


@pytest.mark.skipif(not GEMINI.exists(), reason=f"Gemini CLI not installed at {GEMINI}")
def test_gemini_gets_the_fix_of_an_error_an_indexed_session_got_past(user: tuple[Path, Path, Path]) -> None:
    home, user_home, tools = user
    output = _function_response(gemini_last_request(home, user_home, tools, "go test ./..."))
    assert "Exit Code: 1" in output  # the tool's own result, then the hook's context appended to it
    # Gemini CLI escapes every < and > of a hook's context (so the marker reads &lt;episodic-memory-context…)
    context = output.split("<hook_context>", 1)[1]
    assert context.startswith(MARK.replace("<", "&lt;")) and context.endswith("</hook_context>")
    assert "undefined: regexp" in context and "regexp import was removed" in context
    # the session file keeps the result with the entry appended: indexing it later leaves the entry out
    (session,) = [t for t in _gemini_sessions(user_home) if "&lt;episodic-memory-context" in t[1]]
    trajectory = session[0]
    assert "undefined: regexp" in trajectory.tool_calls[0].output
    assert "episodic-memory-context" not in trajectory.model_dump_json()
    assert f"Session {FIXED_SESSION} of 2026-02-15" in context and "`go test ./...` passed" in context
    assert "post-tool-failure ok: injected the fix of an earlier session" in _hook_log(home)[-1]


# ---------------------------------------------------------------- both


def _codex_sees(home: Path, user_home: Path, tools: Path, command: str) -> str:
    return json.dumps(codex_last_request(home, user_home, tools, command))


def _gemini_sees(home: Path, user_home: Path, tools: Path, command: str) -> str:
    return _function_response(gemini_last_request(home, user_home, tools, command))


@pytest.mark.parametrize(
    "sees",
    [
        pytest.param(
            _codex_sees, marks=pytest.mark.skipif(not CODEX.exists(), reason="no Codex CLI"), id="codex"
        ),
        pytest.param(
            _gemini_sees, marks=pytest.mark.skipif(not GEMINI.exists(), reason="no Gemini CLI"), id="gemini"
        ),
    ],
)
def test_nothing_for_an_unseen_error_or_a_success(user: tuple[Path, Path, Path], sees) -> None:  # type: ignore[no-untyped-def]
    home, user_home, tools = user
    for command, logged in (
        ("go build ./...", "ok: no strong match (never got past in another session)"),
        ("echo all good", "ok: the command succeeded"),
    ):
        assert "episodic-memory-context" not in sees(home, user_home, tools, command)
        assert logged in _hook_log(home)[-1]
