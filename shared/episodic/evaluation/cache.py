"""Content-hashed work cache for evaluation runs: parsed trajectories and cards, in the home folder.

A key is the sha256 of the session's raw bytes plus a fingerprint of the code and settings that
produced the value, so a changed transcript, parser, scrubber or distiller never serves a stale
result, and an unchanged corpus is never parsed or distilled twice.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from pydantic import BaseModel, ValidationError

from episodic.kernel.models import Card, NotEpisode, SessionSource, Trajectory

_CHUNK = 1 << 20


def source_digest(source: SessionSource) -> str:
    """sha256 over the bytes of every file of the session (main file first, then subagents)."""
    digest = hashlib.sha256()
    for path in source.paths:
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
        except OSError as exc:  # an unreadable file gets its own key; the parser reports it
            digest.update(f"unreadable:{exc}".encode())
    return digest.hexdigest()


def _module_files(module: ModuleType) -> list[Path]:
    origin = getattr(module, "__file__", None)
    if not origin:
        return []
    path = Path(origin)
    if path.name == "__init__.py":
        return sorted(path.parent.rglob("*.py"))
    return [path]


def code_fingerprint(module_names: Iterable[str], *extra: object) -> str:
    """Hash of the source of the named modules (packages: every file under them) and extra values."""
    digest = hashlib.sha256()
    for name in module_names:
        module = importlib.import_module(name)
        for path in _module_files(module):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for value in extra:
        digest.update(repr(value).encode() + b"\0")
    return digest.hexdigest()[:16]


class _CachedParse(BaseModel):
    trajectory: Trajectory | None = None
    not_episode: NotEpisode | None = None


class WorkCache:
    """gzip'd JSON files under `root/<kind>/<key[:2]>/<key>.json.gz`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json.gz"

    def _read(self, kind: str, key: str) -> bytes | None:
        try:
            return gzip.decompress(self._path(kind, key).read_bytes())
        except (OSError, EOFError, gzip.BadGzipFile):
            return None

    def _write(self, kind: str, key: str, payload: bytes) -> None:
        path = self._path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(gzip.compress(payload, compresslevel=3))
        os.replace(tmp, path)

    def get_parse(self, key: str) -> Trajectory | NotEpisode | None:
        raw = self._read("trajectories", key)
        if raw is None:
            self.misses += 1
            return None
        try:
            cached = _CachedParse.model_validate_json(raw)
        except ValidationError:  # written by an older model: parse again
            self.misses += 1
            return None
        self.hits += 1
        return cached.trajectory or cached.not_episode

    def put_parse(self, key: str, value: Trajectory | NotEpisode) -> None:
        cached = (
            _CachedParse(trajectory=value)
            if isinstance(value, Trajectory)
            else _CachedParse(not_episode=value)
        )
        self._write("trajectories", key, cached.model_dump_json().encode())

    def get_card(self, key: str) -> Card | None:
        raw = self._read("cards", key)
        if raw is None:
            return None
        try:
            return Card.model_validate_json(raw)
        except ValidationError:
            return None

    def put_card(self, key: str, card: Card) -> None:
        self._write("cards", key, card.model_dump_json().encode())


def combine(*parts: str | Sequence[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update((part if isinstance(part, str) else "\0".join(part)).encode() + b"\1")
    return digest.hexdigest()
