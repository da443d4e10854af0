"""Shared fixtures. Sockets are blocked for the whole session (pytest-socket, see pyproject addopts):
only loopback (all of 127/8) is allowed, so an unmocked AWS call fails instead of leaving the machine."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# The shared transcripts live beside the repository (../shared/transcripts); never copied into it.
TRANSCRIPTS_DIR = Path(
    os.environ.get("EPISODIC_TEST_TRANSCRIPTS", REPO_ROOT.parent / "shared" / "transcripts")
)
DEV_QUERIES = TRANSCRIPTS_DIR.parent / "eval" / "dev-queries.jsonl"
# The local judge (episodic.judge) is the default second stage where its model is installed; the suite runs
# the first stage alone (each process would load the model) and the judge's own tests turn it on.
os.environ["EPISODIC_RERANKER"] = "none"
# measured seconds per module (scripts/test_durations.py): the longest go to the workers first
DURATIONS = Path(__file__).with_name("durations.json")


def _resolve_localhost_names() -> None:
    """`<name>.localhost` resolves to loopback in this test process, as every browser resolves it (RFC 6761;
    the viewer's URL, episodic.ui.security); glibc resolves only `localhost` itself from /etc/hosts."""
    import socket

    system = socket.getaddrinfo
    if getattr(system, "localhost_names", False):
        return

    def getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(host, str) and host.lower().rstrip(".").endswith(".localhost"):
            host = "127.0.0.1"
        return system(host, *args, **kwargs)

    getaddrinfo.localhost_names = True  # type: ignore[attr-defined]
    socket.getaddrinfo = getaddrinfo


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode for the package, written once by the controller: where PYTHONDONTWRITEBYTECODE is set, each of
    the suite's few hundred `episodic` processes would otherwise compile every module changed since."""
    _resolve_localhost_names()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        import compileall

        compileall.compile_dir(REPO_ROOT / "shared", quiet=1)
        if config.getoption("numprocesses", None) and not os.environ.get(PRECOLLECT):
            _rewrite_test_modules_once()


PRECOLLECT = "EPISODIC_TESTS_PRECOLLECT"


def _rewrite_test_modules_once() -> None:
    """The test modules' assertion rewriting, cached in __pycache__ before the workers start, split over the
    cores: where PYTHONDONTWRITEBYTECODE is set, every worker would otherwise rewrite every module itself (the
    workers collect the whole suite each). Only modules changed since their last rewrite; a failure here only
    costs that time: the workers still collect."""
    import subprocess
    import sys

    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"  # where pytest caches a rewrite

    def rewritten(path: Path) -> bool:
        cached = path.parent / "__pycache__" / f"{path.stem}.{tag}"
        return cached.is_file() and cached.stat().st_mtime >= path.stat().st_mtime

    files = sorted(str(path) for path in (REPO_ROOT / "tests").rglob("test_*.py") if not rewritten(path))
    if not files:
        return
    shares = max(1, os.cpu_count() or 1)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env[PRECOLLECT] = "1"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-o",
        "addopts=",
        "-p",
        "no:cacheprovider",
    ]
    running = [
        subprocess.Popen(
            [*command, *files[share::shares]],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for share in range(shares)
    ]
    for process in running:
        try:
            process.wait(timeout=300)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Iterator[int]:
    """`-n auto`: one worker more than the cores, since many tests wait on a server, a subprocess or an agent's
    CLI (measured in docs/performance.md). PYTEST_XDIST_AUTO_NUM_WORKERS still sets the number exactly."""
    cores = yield
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return cores
    return cores + 1


# Modules that share a session fixture too dear to build on every worker: the CDK stack modules synthesize the
# default app once per worker (`default_synth`) in one jsii runtime (a node process) per worker.
SHARED_SETUP_FOLDERS = ("tests/infrastructure/",)


def work_unit(nodeid: str) -> str:
    """What one xdist worker runs whole (`--dist loadfile`): a test module, or a folder of SHARED_SETUP_FOLDERS."""
    module = nodeid.split("::", 1)[0]
    return next((folder for folder in SHARED_SETUP_FOLDERS if module.startswith(folder)), module)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` with work_unit's units: each SHARED_SETUP_FOLDERS folder goes to one worker."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedSetupScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return SharedSetupScheduling(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest work units first (a stable sort keeps each module's tests together and in order), so the
    last units handed out are short ones; pyproject's `--no-loadscope-reorder` keeps this order."""
    try:
        seconds: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    unit_seconds: dict[str, float] = {}
    for module, measured in seconds.items():
        unit_seconds[work_unit(module)] = unit_seconds.get(work_unit(module), 0.0) + measured
    items.sort(key=lambda item: -unit_seconds.get(work_unit(item.nodeid), 0.0))


@pytest.fixture(scope="session")
def transcripts_dir() -> Path:
    if not TRANSCRIPTS_DIR.is_dir():
        pytest.skip(f"shared transcripts not found at {TRANSCRIPTS_DIR}")
    return TRANSCRIPTS_DIR


@pytest.fixture(scope="session")
def shared_embedding_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One MiniLM vector cache (`embedding_cache_dir`) for every test that embeds the shared transcripts'
    cards, across xdist workers: a card set is embedded once per run, not once per test."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, shared by the workers' own
    return root / "embedding-cache"


@pytest.fixture(scope="session")
def dev_queries() -> Path:
    if not DEV_QUERIES.is_file():
        pytest.skip(f"dev queries not found at {DEV_QUERIES}")
    return DEV_QUERIES


@pytest.fixture()
def episodic_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated EPISODIC_HOME and HOME, so no test touches the real home folder."""
    home = tmp_path / "episodic-home"
    user_home = tmp_path / "user-home"
    home.mkdir()
    user_home.mkdir()
    monkeypatch.setenv("EPISODIC_HOME", str(home))
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    for name in list(os.environ):
        if name.startswith("EPISODIC_") and name not in (
            "EPISODIC_HOME",
            "EPISODIC_TEST_TRANSCRIPTS",
            "EPISODIC_RERANKER",
        ):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    yield home
