"""Issue 40, secrets: every shape of `secret_shapes` (credentials by position, encoded and wrapped secrets, the
project's own `epi_` token, a PEM block right after a JWT) and two-secret pairs with every separator are
planted in Claude Code sessions, then looked for in every place they could leave by: the index and history
databases and scratch memory (raw bytes), what an LLM distiller is sent (`inspect --render`), MCP answers,
the prompt hook's injected text and harvest's uploads. Each check also sees the planted text arrive
redacted, so it fails if a path stopped scrubbing rather than passing because nothing arrived."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from episodic.kernel.auth import SCOPES, WRITE, LocalTokenStore, Principal
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.mcp.tools import default_registry
from episodic.scrub import default_scrubber
from episodic.scrub.values import is_placeholder
from kits.hook_kit import injected_context
from kits.secret_shapes import KEPT, SEPARATORS, SHAPES, pairs

from .conftest import cli
from .test_scrub_places import PROMPT, harvested_bodies, index_planted

PER_SESSION = 9
REDACTED = b"[REDACTED:"


@pytest.mark.parametrize(("name", "text", "cores"), SHAPES, ids=[s[0] for s in SHAPES])
def test_each_shape_is_scrubbed_plain_and_json_escaped(name: str, text: str, cores: tuple[str, ...]) -> None:
    scrubber = default_scrubber()
    for variant in (text, json.dumps(text)[1:-1]):
        clean = scrubber.scrub(variant)
        assert [core for core in cores if core in clean] == [], (name, clean)
        assert scrubber.scrub(clean) == clean  # idempotent
    assert scrubber.internal_errors == 0


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_near_the_new_rules_stays(text: str) -> None:
    assert default_scrubber().scrub(text) == text


def _planted() -> list[tuple[str, tuple[str, ...]]]:
    return [(text, cores) for _, text, cores in SHAPES] + pairs()


def _cores() -> list[str]:
    return [core for _, cores in _planted() for core in cores]


def _leaks(blob: bytes | str) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    escaped = data.decode("utf-8", "replace")
    return [c for c in _cores() if c.encode() in data or json.dumps(c)[1:-1] in escaped]


@dataclass
class Corpus:
    claude: Path
    folder: Path
    home: Path
    settings: Settings
    memory: Memory
    sessions: list[str]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("shapes")
    claude = root / "claude"
    folder = claude / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    planted = [text for text, _ in _planted()]
    settings, memory, sessions, report = index_planted(
        root, folder, planted, "4040{i:04d}-4040-4000-8000-{i:012d}", PER_SESSION
    )
    assert report.indexed == len(sessions), report.as_dict()
    return Corpus(claude, folder, root / "home", settings, memory, sessions)


def test_index_history_and_scratch_bytes_hold_no_planted_secret(corpus: Corpus) -> None:
    stored = b"".join(p.read_bytes() for p in corpus.home.rglob("*") if p.is_file())
    assert REDACTED in stored
    assert b"history.sqlite3" in b"".join(p.name.encode() for p in corpus.home.rglob("*"))
    assert _leaks(stored) == []


def test_the_distiller_input_holds_no_planted_secret(corpus: Corpus, tmp_path: Path) -> None:
    for session_id in corpus.sessions:
        rendered = cli(tmp_path / "home", "inspect", "--render", str(corpus.folder / f"{session_id}.jsonl"))
        assert rendered.returncode == 0, rendered.stderr
        assert "[REDACTED:" in rendered.stdout
        assert _leaks(rendered.stdout) == [], session_id


def test_mcp_answers_hold_no_planted_secret(corpus: Corpus) -> None:
    registry = default_registry(corpus.memory)
    principal = Principal("local", SCOPES[WRITE])
    answers = []
    for session_id in corpus.sessions:
        answers.append(registry.call("get_episode", {"session_id": session_id}, principal))
    for name, args in (
        ("search_traces", {"query": "deploy token rejected"}),
        ("history_search", {"topic": "deploy"}),
        ("history_query", {"topic": "deploy"}),
    ):
        answers.append(registry.call(name, args, principal))
    assert not any(a.get("isError") for a in answers), answers
    shown = json.dumps(answers)
    assert "[REDACTED:" in shown
    assert _leaks(shown) == []


@pytest.fixture(scope="module")
def served(corpus: Corpus) -> Iterator[tuple[str, str]]:
    token = LocalTokenStore(corpus.settings.tokens_path).add("local")
    with BackgroundServer(build_endpoint(corpus.settings, corpus.memory)) as server:
        yield server.url, token


def test_the_hooks_text_holds_no_planted_secret(corpus: Corpus, served: tuple[str, str]) -> None:
    url, token = served
    injected = []
    for n, (text, _) in enumerate(_planted()[::7]):  # prompts carrying planted secrets too
        prompt = f"{PROMPT} {n}: {text}"
        injected.append(injected_context(prompt, url, token, corpus.home, EPISODIC_HOOK_BUDGET_SECONDS="30"))
    injected.append(injected_context(PROMPT, url, token, corpus.home, EPISODIC_HOOK_BUDGET_SECONDS="30"))
    context = "\n".join(injected)
    assert "[REDACTED:" in context, context[:2000]
    assert _leaks(context) == []


def test_harvested_uploads_hold_no_planted_secret(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = harvested_bodies(corpus.claude, tmp_path, monkeypatch)
    assert len(bodies) == len(corpus.sessions)
    assert all(REDACTED in body for body in bodies)
    assert _leaks(b"".join(bodies)) == []


def test_pairs_cover_every_separator() -> None:
    used = {sep for sep in SEPARATORS if any(sep in text for text, _ in pairs())}
    assert used == set(SEPARATORS)


def _catalogue_cases() -> list[tuple[str, str, str]]:
    """(rule id, true example, its secret) of the generated Nosey Parker rows, read as files (not through
    the package) so that this test runs against any scrubber, including one without the catalogue."""
    data = Path(__file__).resolve().parents[2] / "shared/episodic/scrub/data"
    rules = json.loads((data / "noseyparker_rules.json").read_text())["rules"]
    examples = json.loads((data / "noseyparker_examples.json").read_text())["examples"]
    cases = []
    for row in rules:
        for encoded in examples[row["id"]]["examples"]:
            example = base64.b64decode(encoded).decode()
            match = re.search(row["pattern"], example)
            groups = [g for g in range(1, row["groups"] + 1) if match and match.group(g)]
            secret = match.group(groups[-1]) if match and groups else ""
            # stand-ins (`tvly-xxxx…`, a `$1$…` hash read as a `$VAR`) are kept by design (values.is_placeholder)
            after_at = bool(groups) and example[: match.start(groups[-1])].endswith("@")  # type: ignore[union-attr]
            if len(secret) >= 12 and not is_placeholder(secret) and not after_at:
                cases.append((row["id"], example, secret))
    return cases


def test_provider_formats_of_the_public_catalogue_never_survive() -> None:
    scrubber = default_scrubber()
    survived = [
        rule_id for rule_id, example, secret in _catalogue_cases() if secret in scrubber.scrub(example)
    ]
    assert len(_catalogue_cases()) >= 100
    assert survived == []
