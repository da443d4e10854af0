"""The judge's files are loaded from the bytes that were hashed: a file swapped between the check and the load is
refused (or never read), and every load error (garbage, a truncated file, wrong bytes that somehow pass the
pin) turns the judge off with its one log line; the server's warm-up thread never dies with a traceback and
search keeps the first stage's order."""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodic.cards.write import embed_card
from episodic.core.search import search_traces
from episodic.judge import model as judge_model
from episodic.judge.model import MODEL_FILES, CrossEncoder, ModelProblem, default_model_dir
from episodic.judge.reranker import JudgeWeights, LocalReranker
from episodic.kernel.memory import Memory
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import warm_second_stage
from kits.mcp_testkit import ALPHA, build_memory

INSTALLED = default_model_dir()
pytestmark = pytest.mark.skipif(
    not INSTALLED.is_dir(), reason=f"the judge's model is not installed at {INSTALLED} (scripts/install)"
)
QUERY = "pytest says fixture 'db_session' not found when I run the tests from the repo root"
RELEVANT = (
    "conftest.py sat in a sub-folder off the collection path; moving it to the tests root fixed db_session"
)
UNRELATED = "The CloudFront distribution served a stale index.html after deploy; an invalidation fixed it."
JUDGE_OFF = "the local judge is off for this process"


def model_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(INSTALLED, copy)
    return copy


def one_bit_flipped(data: bytes) -> bytes:
    altered = bytearray(data)
    altered[-2] ^= 0x01
    return bytes(altered)


def swap_after_check(
    monkeypatch: pytest.MonkeyPatch, folder: Path, name: str, make: Callable[[bytes], bytes]
) -> None:
    """The attacker's race, won every time: `name` is replaced right after the pin check passed."""
    real = judge_model.check_model_dir

    def check_then_swap(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        path = folder / name
        path.write_bytes(make(path.read_bytes()))

    monkeypatch.setattr(judge_model, "check_model_dir", check_then_swap)


def judge_off_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and JUDGE_OFF in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("model.onnx", one_bit_flipped),  # a model that still loads and scores
        ("model.onnx", lambda data: b"\x08\x07garbage" * 1000),
        ("tokenizer.json", one_bit_flipped),
        ("tokenizer.json", lambda data: data[: len(data) // 2]),
    ],
    ids=["model-one-bit", "model-garbage", "tokenizer-one-bit", "tokenizer-truncated"],
)
def test_a_file_swapped_between_check_and_load_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    make: Callable[[bytes], bytes],
) -> None:
    folder = model_copy(tmp_path)
    swap_after_check(monkeypatch, folder, name, make)
    judge = LocalReranker(CrossEncoder(folder))
    with caplog.at_level(logging.ERROR):
        judge.warm()
    assert judge.disabled and name in judge.disabled and "not the pinned file" in judge.disabled
    assert len(judge_off_lines(caplog)) == 1


def test_a_file_swapped_while_onnxruntime_loads_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime gets the checked bytes, not a path it would open again: garbage written in its place then
    changes nothing, and the pinned model scores as the installed one does."""
    import onnxruntime

    folder = model_copy(tmp_path)
    real = onnxruntime.InferenceSession

    def swap_then_load(model: Any, *args: Any, **kwargs: Any) -> Any:
        (folder / "model.onnx").write_bytes(b"garbage, not a model")
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", swap_then_load)
    swapped = CrossEncoder(folder).scores(QUERY, [UNRELATED, RELEVANT], max_tokens=160)
    monkeypatch.setattr(onnxruntime, "InferenceSession", real)
    installed = CrossEncoder(INSTALLED).scores(QUERY, [UNRELATED, RELEVANT], max_tokens=160)
    assert swapped.tolist() == installed.tolist() and swapped[1] > swapped[0]


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("model.onnx", lambda data: b"\x08\x07garbage" * 1000),
        ("model.onnx", lambda data: data[: len(data) // 3]),
        ("model.onnx", lambda data: b""),
        ("tokenizer.json", lambda data: b"\xff\xfe not UTF-8"),
        ("tokenizer.json", lambda data: b'{"model": 1}'),
    ],
    ids=["model-garbage", "model-truncated", "model-empty", "tokenizer-not-utf8", "tokenizer-wrong-json"],
)
def test_bytes_that_pass_the_pin_but_will_not_load_turn_the_judge_off(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    make: Callable[[bytes], bytes],
) -> None:
    """Every load error is the one judge-off line (the pin is moved to the bad bytes: a second way in)."""
    folder = model_copy(tmp_path)
    bad = make((folder / name).read_bytes())
    (folder / name).write_bytes(bad)
    monkeypatch.setitem(MODEL_FILES, name, hashlib.sha256(bad).hexdigest())
    with pytest.raises(ModelProblem, match="could not be loaded"):
        CrossEncoder(folder).load()
    judge = LocalReranker(CrossEncoder(folder))
    with caplog.at_level(logging.ERROR):
        judge.warm()
    assert judge.disabled and len(judge_off_lines(caplog)) == 1


def _memory(tmp_path: Path) -> Memory:
    memory = build_memory(load_settings(home=tmp_path / "home", embedder="hashing", min_similarity=-1.0))
    memory.store.ensure_manifest(memory.manifest)
    for session_id, problem in (("s-fixture", RELEVANT), ("s-cdn", UNRELATED)):
        record = CardRecord(
            card=Card(problem=problem, insight=problem, outcome=Outcome.VERIFIED),
            session_id=session_id,
            tenant_id=ALPHA,
            started_at=datetime(2026, 11, 2, 9, tzinfo=UTC),
            source_sha256="0" * 64,
            distiller=DistillerInfo(kind="claude-code"),
            indexed_at=datetime(2026, 11, 2, 10, tzinfo=UTC),
        )
        memory.store.upsert(record, embed_card(memory, record.card), memory.manifest)
    return memory


def test_garbage_swapped_in_at_server_start_turns_the_judge_off_and_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = _memory(tmp_path)
    first = search_traces(memory, ALPHA, QUERY, k=2)
    folder = model_copy(tmp_path)
    swap_after_check(monkeypatch, folder, "model.onnx", lambda data: b"\x00garbage" * 4096)
    memory.reranker = judge = LocalReranker(CrossEncoder(folder), weights=JudgeWeights(llm=5.0))
    crashed: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", crashed.append)
    with caplog.at_level(logging.ERROR):
        warm_second_stage(memory)  # the server's own warm-up thread
        for thread in threading.enumerate():
            if thread.name == "warm-reranker":
                thread.join(timeout=120)
        after = search_traces(memory, ALPHA, QUERY, k=2)
    assert crashed == []  # no traceback killed the warm-up thread
    assert judge.disabled and len(judge_off_lines(caplog)) == 1
    assert [h.record.session_id for h in after] == [h.record.session_id for h in first]
    assert all(h.judge is None for h in after)
