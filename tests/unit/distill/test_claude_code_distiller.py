"""The Claude Code distiller against a fake `claude` on PATH that checks the flags the real CLI documents
(tests/fixtures/claude_help.txt) and answers with outputs recorded from the real CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import distill_many, index_sessions
from episodic.distill.claude_code import ClaudeCodeDistiller, estimate_claude_code_time
from episodic.distill.heuristic import HeuristicDistiller
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import ConfigError, DistillError, RetryableDistillError
from episodic.kernel.models import Card, DistillerInfo, Outcome, Trajectory
from episodic.kernel.ports import Distiller, DistillResult
from episodic.kernel.settings import load_settings
from episodic.plumbing.marker import DISTILLER_MARKER
from kits import warm_cli
from kits.distill_builders import bash, edit, prompt, say, trajectory
from kits.fake_claude_kit import FAKE, install_fake

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HELP = FIXTURES / "claude_help.txt"
SESSIONS = FIXTURES / "transcripts" / "projects"

_spec = importlib.util.spec_from_file_location("fake_claude_cli", FAKE)
assert _spec is not None and _spec.loader is not None
fake_cli = importlib.util.module_from_spec(_spec)  # the fake's own help-text parser
_spec.loader.exec_module(fake_cli)


@pytest.fixture()
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    install_fake(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    log = tmp_path / "fake-claude.log"
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.delenv("FAKE_CLAUDE_SCENARIO", raising=False)
    monkeypatch.delenv("FAKE_CLAUDE_CARD", raising=False)
    return log


def calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _unverified_session() -> Trajectory:
    return trajectory(
        prompt("the login page is blank after the cookie expires"), edit(), say("should be fixed now")
    )


def _verified_session() -> Trajectory:
    return trajectory(
        prompt("the login page is blank after the cookie expires"),
        edit(),
        bash("go test ./...", "ok  \tgithub.com/dev/proj/auth\t0.2s"),
        say("tests pass"),
    )


def _distill(scenario: str, monkeypatch: pytest.MonkeyPatch, traj: Trajectory | None = None, **kw: object):
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", scenario)
    distiller = ClaudeCodeDistiller(**kw)  # type: ignore[arg-type]
    return distiller.distill(traj or _verified_session(), "SURVEY: the login page went blank")


# ---------------------------------------------------------------- the flags


def test_every_flag_sent_is_documented_in_the_real_help() -> None:
    documented = fake_cli.documented_options()
    command = ClaudeCodeDistiller(model="sonnet").command("claude")
    sent = [arg for arg in command[1:] if arg.startswith("-")]
    assert sent, command
    assert set(sent) <= set(documented), set(sent) - set(documented)
    assert {"-p", "--output-format", "--json-schema", "--no-session-persistence", "--tools"} <= set(sent)
    assert json.loads(command[command.index("--json-schema") + 1]) == Card.json_schema()
    assert command[command.index("--tools") + 1] == ""
    assert "2.1.197" in HELP.read_text(encoding="utf-8").splitlines()[0]


def test_fake_rejects_undocumented_flags_and_a_broken_contract(tmp_path: Path) -> None:
    launcher = install_fake(tmp_path / "bin")
    unknown = subprocess.run(
        [str(launcher), "-p", "--no-such-flag"], input="x", capture_output=True, text=True
    )
    assert unknown.returncode == 1 and "unknown option '--no-such-flag'" in unknown.stderr
    command = ClaudeCodeDistiller().command(str(launcher))
    command.remove("--no-session-persistence")
    broken = subprocess.run(command, input="x", capture_output=True, text=True)
    assert broken.returncode == fake_cli.CONTRACT_BROKEN and "--no-session-persistence" in broken.stderr


def test_valid_card_is_validated_and_usage_recorded(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _distill("valid", monkeypatch, _verified_session(), model="claude-sonnet-4-6")
    recorded = json.loads((FIXTURES / "fake_claude" / "recorded" / "success.json").read_text())
    assert result.card.problem == recorded["structured_output"]["problem"]
    assert result.card.outcome is Outcome.VERIFIED  # a passing check after the last edit backs it
    assert (result.usage.input_tokens, result.usage.output_tokens) == (2468, 642)  # summed over modelUsage
    assert result.usage.cost_usd == pytest.approx(0.017034)
    assert result.usage.duration_ms > 0
    (call,) = calls(fake_claude)
    stdin = str(call["stdin"])
    assert stdin.startswith(DISTILLER_MARKER) and "SURVEY: the login page went blank" in stdin
    argv = list(call["argv"])  # type: ignore[call-overload]
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-6"


def test_unsupported_verified_is_downgraded(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _distill("valid", monkeypatch, _unverified_session())
    assert result.card.outcome is Outcome.UNVERIFIED
    assert any("downgraded" in note for note in result.notes)
    argv = list(calls(fake_claude)[0]["argv"])  # type: ignore[call-overload]
    assert "--model" not in argv  # no model setting: the user's default model


@pytest.mark.parametrize(
    ("scenario", "error", "words"),
    [
        ("invalid-json", DistillError, "not valid JSON"),
        ("schema-violation", DistillError, "no card matching the schema"),
        ("schema-violation-in-result", DistillError, "does not match the schema"),
        ("code-in-field", DistillError, "code"),
        ("crash", DistillError, "something went wrong"),
        ("not-logged-in", ConfigError, "run `claude` once to log in"),
        ("rate-limited", RetryableDistillError, "rate-limited"),
    ],
)
def test_bad_answers_end_as_specified(
    scenario: str, error: type[Exception], words: str, fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(error) as raised:
        _distill(scenario, monkeypatch)
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)  # one line a user can act on
    if error is DistillError:
        assert not isinstance(raised.value, RetryableDistillError)


def test_timeout_is_retryable_and_kills_the_call(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    with pytest.raises(RetryableDistillError, match="did not answer within 1 s"):
        _distill("timeout", monkeypatch, timeout_seconds=1.0)
    assert time.monotonic() - started < 30  # the fake sleeps 60 s: it was killed, not waited for


def test_missing_cli_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match=r"claude CLI not found on PATH.*--distiller heuristic"):
        ClaudeCodeDistiller().distill(_verified_session(), "survey")


def test_runs_in_its_own_empty_folder(tmp_path: Path, fake_claude: Path) -> None:
    """No project's CLAUDE.md or auto-memory near the run (CLAUDE.md files are also excluded by flag)."""
    settings = load_settings(home=tmp_path / "home")
    ClaudeCodeDistiller.from_settings(settings).distill(_verified_session(), "survey")
    (call,) = calls(fake_claude)
    workdir = settings.cache_dir / "claude-code-distill"
    assert Path(str(call["cwd"])).resolve() == workdir.resolve() and not any(workdir.iterdir())


def test_from_settings_and_bad_settings() -> None:
    settings = load_settings(claude_binary="my-claude", claude_model="opus", distill_concurrency=3)
    distiller = ClaudeCodeDistiller.from_settings(settings)
    assert (distiller.binary, distiller.model, distiller.concurrency) == ("my-claude", "opus", 3)
    assert distiller.info == DistillerInfo(kind="claude-code", model="opus")
    with pytest.raises(ConfigError):
        ClaudeCodeDistiller(concurrency=0)
    with pytest.raises(ConfigError):
        ClaudeCodeDistiller(timeout_seconds=0)


# ---------------------------------------------------------------- concurrency and planning


class _SlowDistiller(Distiller):
    info = DistillerInfo(kind="test")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(0.05)
            if survey == "boom":
                raise DistillError("boom")
            return DistillResult(card=Card(problem=survey, outcome=Outcome.INFORMATIONAL))
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.mark.parametrize("concurrency", [1, 2, 3])
def test_distill_many_bounds_concurrency_and_returns_every_item(concurrency: int) -> None:
    distiller = _SlowDistiller()
    traj = _verified_session()
    items = [(traj, f"s{i}") for i in range(7)] + [(traj, "boom")]
    results = dict((survey, out) for (_, survey), out in distill_many(distiller, items, concurrency))
    assert set(results) == {f"s{i}" for i in range(7)} | {"boom"}
    assert isinstance(results["boom"], DistillError)
    assert all(isinstance(results[f"s{i}"], DistillResult) for i in range(7))
    assert distiller.peak == concurrency


def test_estimate_time() -> None:
    assert estimate_claude_code_time(0, 2) == 0.0
    assert estimate_claude_code_time(5, 2, seconds_per_session=10) == 30.0
    assert estimate_claude_code_time(4, 1, seconds_per_session=10) == 40.0


# ---------------------------------------------------------------- through ingest and the CLI


def _memory(home: Path, distiller: Distiller):
    settings = load_settings(home=home, embedder="hashing")
    return build_memory(settings, distiller=distiller, embedder=HashingEmbedder(settings.hashing_dimension))


def test_failed_session_is_recorded_then_retried_and_replaces_heuristic(
    tmp_path: Path, fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    heuristic = index_sessions(_memory(home, HeuristicDistiller()), [str(SESSIONS)], "local")
    assert heuristic.indexed >= 1
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "rate-limited")
    memory = _memory(home, ClaudeCodeDistiller())
    failed = index_sessions(memory, [str(SESSIONS)], "local")
    assert failed.indexed == 0 and len(failed.failed) == heuristic.indexed
    assert all("retry next run" in reason for _, reason in failed.failed)
    assert memory.ledger is not None and len(memory.ledger.failures("local")) == heuristic.indexed
    assert {r.distiller.kind for r in memory.store.iter_records("local")} == {"heuristic"}  # old cards kept
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "valid")
    retried = index_sessions(memory, [str(SESSIONS)], "local")
    assert retried.indexed == heuristic.indexed and retried.replaced == heuristic.indexed
    assert memory.ledger.failures("local") == []
    assert {r.distiller.kind for r in memory.store.iter_records("local")} == {"claude-code"}
    again = index_sessions(memory, [str(SESSIONS)], "local")
    assert again.unchanged == heuristic.indexed and again.indexed == 0  # never distilled twice


def test_cli_index_with_claude_code_then_stats(
    tmp_path: Path, fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`episodic index --distiller claude-code DIR` through the real entry point, then `episodic stats`."""
    env = {
        **os.environ,
        "EPISODIC_HOME": str(tmp_path / "home"),
        "EPISODIC_EMBEDDER": "hashing",
        "HOME": str(tmp_path / "user-home"),
    }

    def episodic(*args: str) -> dict[str, object]:
        done = warm_cli.run(
            [sys.executable, "-m", "episodic", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        data: dict[str, object] = json.loads(done.stdout)
        return data

    report = episodic("index", "--distiller", "claude-code", "--json", str(SESSIONS))
    assert isinstance(report["indexed"], int) and report["indexed"] >= 1 and report["failed"] == []
    assert len(calls(fake_claude)) == report["indexed"]
    stats = episodic("stats", "--json")
    assert stats["by_distiller"] == {"claude-code": report["indexed"]}
