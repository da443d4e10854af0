"""A persistent embedding cache: a second run over the same texts costs a lookup, not a model call.

One SQLite file under the cache directory, keyed by sha256(embedder id + text); the embedder id is in
the key, so one file serves several embedders without ever mixing their vectors. Processes sharing the folder
(an eval beside an index, parallel test workers) fill it in bulk one at a time, each embedding only what the
others have not: the same texts are never embedded twice at once.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from episodic.kernel.ports import Embedder
from episodic.plumbing.sqlite_conn import open_connection, transaction

CACHE_FILE_NAME = "embeddings.sqlite3"
FILL_LOCK_NAME = "embeddings.fill.lock"
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit
# a fill of at least this many texts waits for another process's fill of the same folder (a query's one text
# never waits behind an index's bulk fill)
BULK_FILL_TEXTS = 16


@contextmanager
def fill_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock across processes (where the platform has `fcntl`; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _in_multiprocessing_child() -> bool:
    """A worker multiprocessing is still starting never waits for the fill lock: a script without a main guard
    re-runs in each spawned worker while its parent holds the lock, and must reach Python's own error about the
    guard (which reads the same flag), not hang."""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def cache_key(embedder_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{embedder_id}\x00{text}".encode()).digest()


class CachedEmbedder(Embedder):
    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.id = inner.id
        self.dimension = inner.dimension
        self.default_min_similarity = inner.default_min_similarity
        cache_dir = Path(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / CACHE_FILE_NAME
        self._lock = threading.Lock()
        self._conn = open_connection(self.path, 30_000)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, dimension INTEGER NOT NULL, "
            "vector BLOB NOT NULL) WITHOUT ROWID"
        )
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _lookup(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for lo in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[lo : lo + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT key, dimension, vector FROM embeddings WHERE key IN ({marks})", chunk
            ).fetchall()
            for key, dimension, blob in rows:
                if dimension == self.dimension and len(blob) == 4 * dimension:  # else: recompute
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        keys = [cache_key(self.id, text) for text in texts]
        with self._lock:
            found = self._lookup(sorted(set(keys)))
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if len(missing) >= BULK_FILL_TEXTS and not _in_multiprocessing_child():
            with fill_lock(self.path.with_name(FILL_LOCK_NAME)):
                with self._lock:  # what another process filled while this one waited
                    found.update(self._lookup(sorted(missing)))
                missing = {key: text for key, text in missing.items() if key not in found}
                self._fill(missing, found)
        else:
            self._fill(missing, found)
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        self.misses += len(missing)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _fill(self, missing: dict[bytes, str], found: dict[bytes, np.ndarray]) -> None:
        """Embed the missing texts, store them, and add them to `found`."""
        if not missing:
            return
        vectors = np.asarray(self.inner.embed(list(missing.values())), dtype=np.float32)
        rows = []
        for key, vector in zip(missing, vectors, strict=True):
            found[key] = vector
            rows.append((key, self.dimension, vector.tobytes()))
        with transaction(self._conn, self._lock) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings (key, dimension, vector) VALUES (?, ?, ?)", rows
            )
