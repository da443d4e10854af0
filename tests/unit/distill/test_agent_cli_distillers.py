"""Codex CLI and Gemini CLI as distillers, against a fake `codex` / `gemini` on PATH that checks the flags the
real CLIs document (tests/fixtures/agent_cli/*_help.txt) and answers with outputs the real CLIs printed
(tests/fixtures/agent_cli/recorded, made by record.py against a loopback mock of each model API)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from episodic.distill.agent_cli import AgentCliDistiller, CliRun, run_cli
from episodic.distill.agents import distiller_for
from episodic.kernel.errors import ConfigError, DistillError, RetryableDistillError
from episodic.kernel.models import Card, Outcome, Trajectory
from episodic.kernel.settings import load_settings
from episodic.plumbing.marker import DISTILLER_MARKER
from kits import warm_cli
from kits.distill_builders import bash, edit, prompt, say, trajectory
from kits.fake_claude_kit import AGENT_FAKE, install_fake_agent, private_folder

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
RECORDED = FIXTURES / "agent_cli" / "recorded"
SESSIONS = FIXTURES / "transcripts" / "projects"
CLIS = ("codex", "gemini")

_spec = importlib.util.spec_from_file_location("fake_agent_cli", AGENT_FAKE)
assert _spec is not None and _spec.loader is not None
fake_cli = importlib.util.module_from_spec(_spec)  # the fake's own help-text parser
_spec.loader.exec_module(fake_cli)


@pytest.fixture()
def private_dir() -> Iterator[Path]:
    with private_folder("test-agent-cli") as path:
        yield path


@pytest.fixture()
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for cli in CLIS:
        install_fake_agent(tmp_path / "bin", cli)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    log = tmp_path / "fake-agent.log"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    for name in ("FAKE_AGENT_SCENARIO", "FAKE_AGENT_CARD", "FAKE_AGENT_LOGIN", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # Gemini's login is read from local state before the first call: the stand-in stands for a signed-in CLI
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key-not-real")
    return log


def calls(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _verified() -> Trajectory:
    return trajectory(
        prompt("the login page is blank after the cookie expires"),
        edit(),
        bash("go test ./...", "ok  \tgithub.com/dev/proj/auth\t0.2s"),
        say("tests pass"),
    )


def _distiller(cli: str, home: Path, **settings: object) -> AgentCliDistiller:
    return distiller_for(load_settings(home=home, **settings), cli)  # type: ignore[arg-type]


def _distill(cli: str, home: Path, scenario: str = "valid", monkeypatch: pytest.MonkeyPatch | None = None):
    if monkeypatch is not None:
        monkeypatch.setenv("FAKE_AGENT_SCENARIO", scenario)
    return _distiller(cli, home).distill(_verified(), "SURVEY: the login page went blank")


# ---------------------------------------------------------------- the command lines


@pytest.mark.parametrize("cli", CLIS)
def test_every_flag_sent_is_documented_in_the_real_help(cli: str, private_dir: Path) -> None:
    documented = fake_cli.documented(cli)
    command = _distiller(cli, private_dir, **{f"{cli}_model": "some-model"}).command(cli)
    sent = [arg for arg in command[1:] if arg.startswith("-") and arg != "-"]
    assert sent and set(sent) <= set(documented), set(sent) - set(documented)
    assert "--model" in sent
    header = (FIXTURES / "agent_cli" / f"{'codex_exec' if cli == 'codex' else 'gemini'}_help.txt").read_text()
    assert ("0.171.0" if cli == "codex" else "0.61.0") in header.splitlines()[0]


def test_codex_schema_file_is_the_card_schema_in_strict_form(private_dir: Path) -> None:
    command = _distiller("codex", private_dir).command("codex")
    schema = json.loads(Path(command[command.index("--output-schema") + 1]).read_text())
    card = Card.json_schema()
    assert set(schema["properties"]) == set(card["properties"]) and schema["required"] == card["required"]
    assert schema["additionalProperties"] is False and '"default"' not in json.dumps(schema)
    assert schema["properties"]["outcome"]["enum"] == card["properties"]["outcome"]["enum"]


def test_fake_rejects_undocumented_flags_and_a_broken_contract(tmp_path: Path, private_dir: Path) -> None:
    for cli in CLIS:
        launcher = install_fake_agent(tmp_path / "bin", cli)
        head = [str(launcher), "exec"] if cli == "codex" else [str(launcher)]
        unknown = subprocess.run([*head, "--no-such-flag"], input="x", capture_output=True, text=True)
        assert unknown.returncode == 2 and "--no-such-flag" in unknown.stderr
    distiller = _distiller("codex", private_dir)
    command = distiller.command(str(tmp_path / "bin" / "codex"))
    command.remove("--ephemeral")
    env = {**os.environ, "EPISODIC_DISTILLING": "1"}
    broken = subprocess.run(command, input=DISTILLER_MARKER, capture_output=True, text=True, env=env)
    assert broken.returncode == fake_cli.CONTRACT_BROKEN and "--ephemeral" in broken.stderr


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize(("cli", "tokens"), [("codex", (2310, 214)), ("gemini", (4580, 416))])
def test_valid_card_from_the_recorded_output(
    cli: str, tokens: tuple[int, int], fakes: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _distill(cli, private_dir, "valid", monkeypatch)
    recorded = (RECORDED / ("codex-success.jsonl" if cli == "codex" else "gemini-success.json")).read_text()
    assert result.card.problem == "The login page went blank after the session cookie expired."
    assert result.card.problem in recorded
    assert result.card.outcome is Outcome.VERIFIED  # a passing check after the last edit backs it
    assert (result.usage.input_tokens, result.usage.output_tokens) == tokens
    (call,) = calls(fakes)
    stdin = str(call["stdin"])
    assert stdin.startswith(DISTILLER_MARKER) and "SURVEY: the login page went blank" in stdin
    env = dict(call["env"])  # type: ignore[call-overload]
    assert env["EPISODIC_DISTILLING"] == "1"  # our hooks do nothing under it
    assert Path(str(call["cwd"])).resolve() == (private_dir / "cache" / f"{cli}-distill").resolve()
    if cli == "gemini":
        settings = json.loads((Path(str(call["cwd"])) / ".gemini" / "settings.json").read_text())
        assert settings["hooksConfig"]["enabled"] is False and env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
        assert "outcome" in stdin and '"enum"' in stdin  # no schema flag: the schema is in the prompt


@pytest.mark.parametrize(
    ("cli", "scenario", "error", "words"),
    [
        ("codex", "invalid-json", DistillError, "after one repair"),
        ("codex", "code-in-field", DistillError, "code"),
        ("codex", "crash", DistillError, "something went wrong"),
        ("codex", "not-logged-in", ConfigError, "Codex CLI is not logged in: run `codex login`"),
        ("codex", "rate-limited", RetryableDistillError, "rate-limited"),
        ("gemini", "invalid-json", DistillError, "after one repair"),
        ("gemini", "code-in-field", DistillError, "code"),
        ("gemini", "crash", DistillError, "something went wrong"),
        ("gemini", "not-logged-in", ConfigError, "Gemini CLI is not logged in: run `gemini` once"),
        ("gemini", "rate-limited", RetryableDistillError, "rate-limited"),
    ],
)
def test_bad_answers_end_as_specified(
    cli: str,
    scenario: str,
    error: type[Exception],
    words: str,
    fakes: Path,
    private_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(error) as raised:
        _distill(cli, private_dir, scenario, monkeypatch)
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)  # one line a user can act on
    if error is DistillError:
        assert not isinstance(raised.value, RetryableDistillError)
    if scenario in ("invalid-json", "code-in-field"):  # one repair turn, with the reason fed back
        first, second = calls(fakes)
        assert "The card was rejected" in str(second["stdin"]) and "The card was rejected" not in str(
            first["stdin"]
        )


@pytest.mark.parametrize("cli", CLIS)
def test_a_repair_turn_fixes_an_invalid_card(cli: str, fakes: Path, private_dir: Path) -> None:
    scenarios = iter(["code-in-field", "valid"])

    def runner(
        command: list[str], stdin: str, timeout: float, cwd: Path | None, env: Mapping[str, str] | None = None
    ) -> CliRun:
        if command[1:3] == ["login", "status"]:  # Codex's login check comes first
            return run_cli(command, stdin, timeout, cwd, env)
        return run_cli(command, stdin, timeout, cwd, {**(env or {}), "FAKE_AGENT_SCENARIO": next(scenarios)})

    distiller = _distiller(cli, private_dir)
    distiller.runner = runner
    result = distiller.distill(_verified(), "SURVEY")
    assert result.notes[0].startswith("repaired after:") and "code" in result.notes[0]
    assert len(calls(fakes)) == 2
    assert (result.usage.input_tokens or 0) > 0


def test_gemini_answer_in_a_code_fence_is_read(
    fakes: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _distill("gemini", private_dir, "fenced", monkeypatch).card.outcome is Outcome.VERIFIED
    assert len(calls(fakes)) == 1


def test_codex_logged_out_is_said_before_any_model_call(
    fakes: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logged out, `codex exec` retries the API for minutes instead of saying so (observed, 0.171)."""
    monkeypatch.setenv("FAKE_AGENT_LOGIN", "out")
    distiller = _distiller("codex", private_dir)
    assert distiller.login() == (False, "not logged in (run `codex login`, or set CODEX_API_KEY)")
    with pytest.raises(ConfigError, match=r"Codex CLI is not logged in \(run `codex login`"):
        distiller.distill(_verified(), "SURVEY")
    assert calls(fakes) == []  # no exec was started


def test_codex_login_status_recorded_answers(fakes: Path, private_dir: Path) -> None:
    logged_in, how = _distiller("codex", private_dir).login()
    assert logged_in is True and "API key configured" in how


def test_timeout_is_retryable(fakes: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_SCENARIO", "timeout")
    distiller = _distiller("gemini", private_dir)
    distiller.timeout_seconds = 1.0
    with pytest.raises(RetryableDistillError, match="did not answer within 1 s"):
        distiller.distill(_verified(), "SURVEY")


def test_gemini_distills_below_a_folder_others_may_write(fakes: Path, tmp_path: Path) -> None:
    """Below /tmp (mode 1777) too: the hooks switch is in the trusted run folder's own settings, which Gemini
    CLI reads wherever the folder is (a system settings file there it skips)."""
    result = _distiller("gemini", tmp_path / "home").distill(_verified(), "SURVEY")
    assert result.card.problem and len(calls(fakes)) == 1


@pytest.mark.parametrize(
    ("env", "files", "expected"),
    [
        ({}, {}, False),
        ({"GEMINI_API_KEY": "k"}, {}, True),
        ({}, {"settings.json": {"security": {"auth": {"selectedType": "oauth-personal"}}}}, False),
        (
            {},
            {
                "settings.json": {"security": {"auth": {"selectedType": "oauth-personal"}}},
                "oauth_creds.json": {},
            },
            True,
        ),
        ({}, {"settings.json": {"security": {"auth": {"selectedType": "gemini-api-key"}}}}, None),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, {}, True),
    ],
)
def test_gemini_login_is_read_from_local_state(
    env: dict[str, str],
    files: dict[str, object],
    expected: bool | None,
    fakes: Path,
    private_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    user = private_dir / "user"
    (user / ".gemini").mkdir(parents=True)
    for name, data in files.items():
        (user / ".gemini" / name).write_text(json.dumps(data))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    assert _distiller("gemini", private_dir).login()[0] is expected
    assert calls(fakes) == []  # no model call, not even the CLI


# ---------------------------------------------------------------- through `episodic index`


@pytest.mark.parametrize("cli", CLIS)
def test_cli_index_with_the_agent_then_stats(cli: str, fakes: Path, private_dir: Path) -> None:
    env = {
        **os.environ,
        "EPISODIC_HOME": str(private_dir / "home"),
        "EPISODIC_EMBEDDER": "hashing",
        "HOME": str(private_dir / "user-home"),
        "GEMINI_CLI_HOME": str(private_dir / "user-home"),
    }

    def episodic(*args: str) -> dict[str, object]:
        done = warm_cli.run(
            [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        data: dict[str, object] = json.loads(done.stdout)
        return data

    report = episodic("index", "--distiller", cli, "--json", str(SESSIONS))
    assert isinstance(report["indexed"], int) and report["indexed"] >= 1 and report["failed"] == []
    assert len([c for c in calls(fakes) if c["cli"] == cli]) == report["indexed"]
    assert episodic("stats", "--json")["by_distiller"] == {cli: report["indexed"]}


def test_codex_with_a_missing_codex_home_is_not_logged_in(private_dir: Path) -> None:
    """Real 0.171 output (exit 1) when CODEX_HOME names a folder that does not exist."""
    said = (RECORDED / "codex-login-status-no-codex-home.txt").read_text()

    def runner(
        command: list[str], stdin: str, timeout: float, cwd: Path | None, env: object = None
    ) -> CliRun:
        assert command[1:] == ["login", "status"]
        return CliRun(1, "", said)

    distiller = _distiller("codex", private_dir)
    distiller.runner = runner
    distiller.resolve_binary = lambda: "codex"  # type: ignore[method-assign]
    logged_in, how = distiller.login()
    assert logged_in is False and "does not exist" in how and "WARNING" not in how


def test_inspect_plans_time_and_tokens_for_the_agent_clis() -> None:
    from episodic.sessions.backfill_estimate import InspectReport

    report = InspectReport(episodes=5, survey_tokens=[1000] * 5, distill_concurrency=2, model_id="x")
    plan = report.as_dict()["agent_cli"]
    assert isinstance(plan, dict)
    assert plan["estimated_seconds"] == 3 * plan["seconds_per_session"]  # ceil(5 / 2) rounds of calls
    assert plan["input_tokens"] == report.estimate()["input_tokens"] > 5000
    assert report.as_dict()["claude_code"] == plan


def test_session_end_worker_distils_with_codex_within_the_daily_cap(
    fakes: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's SessionEnd worker with Codex as distiller: heuristic card first, then Codex's; the
    daily cap (`distill_daily_cap`) holds for it as for Claude Code."""
    from episodic.hooks import session_end as session_distill
    from episodic.store.sqlite import SQLiteStore

    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    settings = load_settings(home=private_dir / "home", distiller="codex", distill_daily_cap=1)
    source = SESSIONS / "-home-dev-my-app-v2-0" / "11111111-1111-4111-8111-111111111111.jsonl"
    first, second = (
        private_dir / "projects" / "-home-dev-app" / f"{n}1111111-1111-4111-8111-111111111111.jsonl"
        for n in (2, 3)
    )
    first.parent.mkdir(parents=True)
    for path in (first, second):
        path.write_text(source.read_text().replace("11111111-1111-4111-8111-111111111111", path.stem))
    assert "Codex CLI card stored" in session_distill.distill_session(settings, str(first))
    assert "daily cap of 1 is reached" in session_distill.distill_session(settings, str(second))
    with SQLiteStore(settings.db_path) as store:
        kinds = {r.session_id: r.distiller.kind for r in store.iter_records("local")}
    assert kinds == {first.stem: "codex", second.stem: "heuristic"}
    assert len([c for c in calls(fakes) if c["cli"] == "codex"]) == 1


@pytest.mark.parametrize("cli", CLIS)
def test_the_dream_model_gets_its_schema_through_the_same_call(
    cli: str, fakes: Path, private_dir: Path
) -> None:
    from episodic.dream.llm import EXTRACT_SYSTEM, AgentCliDreamModel, extract_schema

    model = AgentCliDreamModel(_distiller(cli, private_dir))
    answer = model.complete(EXTRACT_SYSTEM, "the thread", extract_schema())
    assert answer["problem"] == "The login page went blank after the session cookie expired."  # the fake's
    (call,) = calls(fakes)
    argv, stdin = list(call["argv"]), str(call["stdin"])  # type: ignore[call-overload]
    assert stdin.startswith(DISTILLER_MARKER) and EXTRACT_SYSTEM in stdin
    if cli == "codex":
        sent = json.loads(Path(argv[argv.index("--output-schema") + 1]).read_text())
        assert set(sent["properties"]) == set(extract_schema()["properties"]) == set(sent["required"])
    else:
        assert json.dumps(extract_schema(), separators=(",", ":")) in stdin
    assert model.id == f"{cli}:default"
