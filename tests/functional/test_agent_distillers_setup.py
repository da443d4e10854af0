"""`setup codex --write` / `setup gemini --write` make that CLI the distiller where it is logged in (checked
without a model call), keep the heuristic where it is not, say so, and `--distiller heuristic` undoes it;
`doctor` probes the chosen one. Through the installed `episodic` in a fresh HOME, with the stand-in `codex`
and `gemini` (tests/fixtures/agent_cli/fake_agent.py) on PATH. Then the real CLIs, logged out (skipped when
`scripts/install --dev` did not install them): the clear message, from the real CLI's own answer."""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from kits import warm_cli
from kits.client_env import DEMO, EPISODIC, bare_env, free_port
from kits.fake_claude_kit import install_fake_agent, private_folder

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
REAL = {
    "codex": Path(os.environ.get("EPISODIC_TEST_CODEX", TOOLS / "codex" / "node_modules" / ".bin" / "codex")),
    "gemini": Path(
        os.environ.get("EPISODIC_TEST_GEMINI", TOOLS / "gemini" / "node_modules" / ".bin" / "gemini")
    ),
}


@pytest.fixture()
def private_dir() -> Iterator[Path]:
    with private_folder("test-agent-setup") as path:
        yield path


class User:
    def __init__(self, tmp: Path, **env: str) -> None:
        self.home, self.user_home = tmp / "episodic-home", tmp / "user-home"
        self.home.mkdir(parents=True)
        self.user_home.mkdir()
        (self.home / "config.toml").write_text(
            f'embedder = "hashing"\nport = {free_port()}\nhook_autostart = false\n'
        )
        bin_dir = tmp / "bin"
        for cli in ("codex", "gemini"):
            install_fake_agent(bin_dir, cli)
        self.env = bare_env(self.home, self.user_home, **env)
        self.env["PATH"] = f"{bin_dir}:{self.env['PATH']}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return warm_cli.run([str(EPISODIC), *args], env=self.env, capture_output=True, text=True, timeout=300)

    def config(self) -> str:
        return (self.home / "config.toml").read_text()


@pytest.mark.parametrize(
    ("cli", "logged_in", "logged_out", "how"),
    [
        ("codex", {}, {"FAKE_AGENT_LOGIN": "out"}, "Codex CLI is on PATH and logged in (API key configured"),
        (
            "gemini",
            {"GEMINI_API_KEY": "fake-key"},
            {},
            "Gemini CLI is on PATH and logged in (GEMINI_API_KEY)",
        ),
    ],
)
def test_setup_makes_a_logged_in_agent_the_distiller_and_heuristic_opts_out(
    cli: str, logged_in: dict[str, str], logged_out: dict[str, str], how: str, private_dir: Path
) -> None:
    user = User(private_dir / "in", **logged_in)
    assert user.run("index", str(DEMO)).returncode == 0
    printed = user.run("setup", cli)  # no --write: says what it would do, writes nothing
    assert f"# distiller: {cli} (saved by --write)" in printed.stdout, printed.stdout + printed.stderr
    assert "distiller" not in user.config()

    chosen = user.run("setup", cli, "--write")
    assert chosen.returncode == 0, chosen.stderr
    said = " ".join(chosen.stdout.split())
    assert f"distiller: {cli} (saved in" in said and how in said, said
    assert "the 6 heuristic cards indexed so far" in said
    assert f"`episodic setup {cli} --distiller heuristic --write` opts out" in said
    assert f'distiller = "{cli}"' in user.config()

    doctor = user.run("doctor")
    line = next(x for x in doctor.stdout.splitlines() if "] distiller:" in x)
    assert line.startswith("[ok") and f"{cli}, logged in" in line and "a probe distil:" in line, doctor.stdout

    if cli == "codex":  # Claude Code's SessionEnd hook then re-distils its ended sessions with Codex
        claude = user.run("setup", "claude-code", "--write")
        assert "distiller: codex (as configured)" in claude.stdout, claude.stdout + claude.stderr
        settings = (user.user_home / ".claude" / "settings.json").read_text()
        assert "SessionEnd" in settings and "hook session-distill" in settings

    out = user.run("setup", cli, "--distiller", "heuristic", "--write")
    assert out.returncode == 0 and "distiller: heuristic (saved in" in out.stdout, out.stderr
    assert 'distiller = "heuristic"' in user.config()

    other = User(private_dir / "out", **logged_out)
    kept = other.run("setup", cli, "--write")
    assert kept.returncode == 0, kept.stderr
    assert "distiller: heuristic (the default)" in kept.stdout
    assert "distiller" not in other.config()
    assert f"Log in, then run `episodic setup {cli} --write` again" in " ".join(kept.stderr.split())


# ---------------------------------------------------------------- the real CLIs, logged out


def _session():  # type: ignore[no-untyped-def]
    from kits.distill_builders import bash, edit, prompt, say, trajectory

    return trajectory(prompt("the login page is blank"), edit(), bash("go test ./...", "ok"), say("done"))


def _real_distiller(cli: str, private_dir: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from episodic.distill.agents import distiller_for
    from episodic.kernel.settings import load_settings

    if not REAL[cli].exists():
        pytest.skip(f"{cli} CLI not installed at {REAL[cli]} (scripts/install --dev)")
    user = private_dir / "user"
    user.mkdir()
    for name in (
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_GEMINI_BASE_URL",
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("CODEX_HOME", raising=False)  # ~/.codex, made by the CLI (a CODEX_HOME must exist)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    settings = load_settings(home=private_dir / "episodic", **{f"{cli}_binary": str(REAL[cli])})
    distiller = distiller_for(settings, cli)
    distiller.timeout_seconds = 120.0
    return distiller


def test_the_real_codex_logged_out_says_so(private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`codex login status` of the real CLI says "Not logged in": the distiller says how to log in, and
    starts no `codex exec` (which, logged out, retries the API instead of saying so)."""
    from episodic.kernel.errors import ConfigError

    distiller = _real_distiller("codex", private_dir, monkeypatch)
    assert distiller.login() == (False, "not logged in (run `codex login`, or set CODEX_API_KEY)")
    with pytest.raises(ConfigError) as raised:
        distiller.distill(_session(), "SURVEY: the login page went blank")
    assert str(raised.value) == "Codex CLI is not logged in (run `codex login`, or set CODEX_API_KEY)"


def test_the_real_gemini_logged_out_says_so(private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No sign-in method: the distiller says so before any call, in the words `setup` and `doctor` use;
    the real `gemini -p` with our flags, called anyway, says so too (code 41), made one clear line."""
    from episodic.distill.agent_cli import run_cli
    from episodic.kernel.errors import ConfigError
    from episodic.plumbing.marker import DISTILLER_MARKER

    distiller = _real_distiller("gemini", private_dir, monkeypatch)
    logged_in, how = distiller.login()
    assert logged_in is False and distiller.cannot_run() == f"Gemini CLI is {how}"
    with pytest.raises(ConfigError) as raised:
        distiller.distill(_session(), "SURVEY: the login page went blank")
    assert str(raised.value) == f"Gemini CLI is {how}"
    workdir = distiller.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    command = distiller.command(distiller.resolve_binary())
    run = run_cli(command, DISTILLER_MARKER, 120.0, workdir, distiller.agent.env(workdir))
    with pytest.raises(ConfigError) as raised:
        distiller.agent.read(run)
    message = str(raised.value)
    assert message.startswith("Gemini CLI is not logged in: run `gemini` once and choose a sign-in method")
    assert "Please set an Auth method" in message and "\n" not in message


# ---------------------------------------------------------------- the real CLIs against a loopback API


def _record_kit():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "agent_cli_record", REPO / "tests/fixtures/agent_cli/record.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _distill_through(kit, cli, distiller, server, url, monkeypatch):  # type: ignore[no-untyped-def]
    """The card of `_session()` from the real CLI pointed at the loopback `server` (shut down after)."""
    for name, value in kit.mock_env(cli, url).items():
        monkeypatch.setenv(name, value)
    real_runner = distiller.runner
    distiller.runner = lambda command, *rest: real_runner(kit.with_provider(command, url), *rest)
    try:
        return distiller.distill(_session(), kit.SURVEY)
    finally:
        server.shutdown()


@pytest.mark.parametrize("cli", ["codex", "gemini"])
def test_the_real_cli_distills_with_hooks_and_mcp_off_and_its_run_is_never_indexed(
    cli: str, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our exact command through the real CLI, against a loopback mock of its model API (record.py): the
    card comes back, the user's hook and MCP server (planted, each leaving a trace) never run, and what the
    run left in the agent's session folders is not indexed (Codex: none, --ephemeral; Gemini: a chat file
    that the parser skips as `distiller-run`)."""
    from episodic.assembly import build_memory
    from episodic.core.ingest import index_sessions
    from episodic.embed.hashing import HashingEmbedder
    from episodic.kernel.settings import load_settings

    kit = _record_kit()
    distiller = _real_distiller(cli, private_dir, monkeypatch)
    user, traces = Path(os.environ["HOME"]), private_dir / "traces"
    traces.mkdir()
    for name, value in {**kit.plant(user, cli, traces), "HOME": str(user)}.items():
        monkeypatch.setenv(name, value)
    result = _distill_through(kit, cli, distiller, *kit.serve_mock(), monkeypatch)
    assert result.card.problem == kit.CARD["problem"] and (result.usage.input_tokens or 0) > 0
    assert list(traces.iterdir()) == []  # no hook ran, no MCP server started
    requests = "\n".join(kit.Mock.bodies)
    assert "tracer" not in requests and requests.count(kit.SURVEY) >= 1
    written = [p for p in (user / f".{cli}").rglob("*.json*") if "session" in p.name or "rollout" in p.name]
    if cli == "codex":
        assert written == []  # --ephemeral: no rollout
        return
    assert written, "Gemini CLI wrote no chat file for the headless run"
    settings = load_settings(home=private_dir / "index", embedder="hashing")
    memory = build_memory(settings, embedder=HashingEmbedder(settings.hashing_dimension))
    report = index_sessions(memory, [str(p) for p in written], "local")
    assert report.indexed == 0 and report.skipped.get("distiller-run", 0) >= 1, report


# ---------------------------------------------------------------- a hostile endpoint's tool calls

PLANTED_TEXT = "PLANTED-FILE-CONTENT-5c1e"
PNG_1X1 = (  # a valid 1x1 PNG: what view_image would read and send back
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde"
    b"\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82"
)


def _hostile_calls(cli: str, planted: Path) -> list[dict]:
    """What a hostile endpoint asks for first: every tool the CLI has (reads, images, search, agents)."""
    text, image = str(planted / "notes.txt"), str(planted / "shot.png")
    if cli == "gemini":
        calls = [
            ("read_file", {"file_path": text}), ("list_directory", {"dir_path": str(planted)}),
            ("grep_search", {"pattern": "PLANTED", "dir_path": str(planted)}), ("glob", {"pattern": "**/*"}),
            ("google_web_search", {"query": "x"}), ("invoke_agent", {"agent_name": "x", "prompt": "x"}),
            ("run_shell_command", {"command": f"cat {text}"}), ("enter_plan_mode", {}),
        ]  # fmt: skip
        return [{"functionCall": {"name": name, "args": args}} for name, args in calls]
    calls = [
        ("view_image", {"path": image}), ("exec_command", {"cmd": f"cat {text}"}),
        ("web_search", {"query": "x"}), ("spawn_agent", {"message": "x"}),
        ("request_user_input", {"questions": []}), ("create_goal", {"objective": "x"}),
    ]  # fmt: skip
    return [
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
         "arguments": json.dumps(args)}
        for n, (name, args) in enumerate(calls)
    ]  # fmt: skip


@pytest.mark.parametrize("cli", ["codex", "gemini"])
def test_the_real_cli_offers_the_model_no_tool_and_runs_none_a_hostile_endpoint_calls(
    cli: str, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52 item 13: our exact command through the real CLI against a loopback endpoint whose first
    answer calls every tool the CLI has (view_image on a planted PNG, reads of a planted file, web search,
    sub-agents): no tool is offered in any request, and nothing a call would have read reaches the
    endpoint; the card still comes back."""
    import base64

    kit = _record_kit()
    distiller = _real_distiller(cli, private_dir, monkeypatch)
    planted = private_dir / "planted"
    planted.mkdir()
    (planted / "notes.txt").write_text(PLANTED_TEXT)
    (planted / "shot.png").write_bytes(PNG_1X1)
    user, traces = Path(os.environ["HOME"]), private_dir / "traces"
    traces.mkdir()
    for name, value in {**kit.plant(user, cli, traces), "HOME": str(user)}.items():
        monkeypatch.setenv(name, value)
    calls, bodies = _hostile_calls(cli, planted), []

    class Hostile(kit.Mock):  # type: ignore[name-defined,misc]
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            bodies.append(json.loads(raw or b"{}"))
            self.rfile = io.BytesIO(raw)
            first = len([b for b in bodies if "input" in b or "contents" in b]) == 1
            if first and "/responses" in self.path:
                done = {"id": "r0", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
                events = [("response.created", {"response": {"id": "r0"}})]
                events += [("response.output_item.done", {"item": call}) for call in calls]
                events += [("response.completed", {"response": done})]
                self._events(
                    "".join(f"event: {k}\ndata: {json.dumps({'type': k, **d})}\n\n" for k, d in events)
                )
            elif first and "streamGenerateContent" in self.path:
                chunk = {
                    "candidates": [{"content": {"role": "model", "parts": calls}, "finishReason": "STOP"}]
                }
                self._events(f"data: {json.dumps(chunk)}\n\n")
            else:
                super().do_POST()

        def _events(self, payload: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(payload.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    result = _distill_through(kit, cli, distiller, server, url, monkeypatch)
    assert result.card.problem == kit.CARD["problem"]
    asked = [b for b in bodies if "input" in b or "contents" in b]
    assert len(asked) >= 2, "the CLI never answered the tool calls"
    offered = [t for b in asked for t in b.get("tools") or []]
    if cli == "gemini":
        offered = [d for t in offered for d in t.get("functionDeclarations") or []]
    assert offered == [], [t.get("name") for t in offered]
    sent = json.dumps(asked)
    assert PLANTED_TEXT not in sent and base64.b64encode(PNG_1X1).decode()[:40] not in sent
    assert "data:image" not in sent
