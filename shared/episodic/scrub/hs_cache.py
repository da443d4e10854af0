"""Compiled Hyperscan databases, cached beside the environment and checked before use.

A compile costs every process that scrubs a noticeable pause, so each database is saved once per install. A
cached file is used only when (1) its digest matches the one written beside it at compile time (over the
pattern set's key and the database's bytes: another valid database copied over it fails) and (2) a
known-answer scan finds every one of its patterns in a sample made from that pattern (a database that matches
less than it should fails, whatever digest was written with it). Any mismatch: the database is recompiled and
the cache rewritten, with one warning in the log. Whoever can write the environment can change the scrubber's
code as well; these checks keep a swapped or stale cache from silently turning redaction off.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from episodic.plumbing import regex_tree
from episodic.plumbing.regex_tree import OPS

log = logging.getLogger(__name__)

MAX_DATABASE_BYTES = 64 << 20  # far above any database of the scrubber's: a larger file is not ours, unread
Probe = tuple[int, bytes]  # (pattern id, a text that pattern must match)
# characters tried, in order, where a sample needs one outside a class (`[^…]`)
_OUTSIDE = "\n #~a0A"


def cache_dir() -> Path:
    """Beside the environment (as the judge's model): one compile per install, not per process."""
    return Path(sys.prefix) / "share" / "episodic" / "scrub-cache"


def compiled(hs: Any, expressions: list[bytes], ids: list[int], flags: list[int], probes: list[Probe]) -> Any:
    """The block-mode database of these patterns: the cached one when it passes both checks, else compiled
    (and cached). A cache that cannot be read or written is skipped, never an error."""
    key = cache_key(hs, expressions, ids, flags)
    path = cache_dir() / f"{key[:32]}.hsdb"
    pin = path.with_suffix(".sha256")
    problem = ""
    try:
        data = _read_bounded(path)
        if pin.read_text(encoding="ascii").strip() != digest(key, data):
            problem = "its digest is not the one written when it was compiled"
        else:
            database = hs.loadb(data, mode=hs.HS_MODE_BLOCK)
            missed = missing_ids(hs, database, probes)
            if not missed:
                return database
            problem = f"a known-answer scan missed {len(missed)} of its {len(probes)} patterns"
    except FileNotFoundError:  # not compiled yet (or cached by a release without the digest): no news
        pass
    except Exception as exc:  # unreadable, too large, not a database of this Hyperscan
        problem = f"it could not be loaded ({type(exc).__name__})"
    database = hs.Database(mode=hs.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    if problem:
        log.warning(
            "the scrubber's cached Hyperscan database %s was not used: %s; recompiled it", path, problem
        )
    with contextlib.suppress(Exception):
        data = hs.dumpb(database)
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, content in ((path, data), (pin, digest(key, data).encode("ascii"))):
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(content)
            os.replace(tmp, target)
    return database


def cache_key(hs: Any, expressions: list[bytes], ids: list[int], flags: list[int]) -> str:
    """The pattern set's hash (and Hyperscan's version): it names the cached file and enters its digest."""
    version = getattr(hs, "__version__", "")
    return hashlib.sha256(repr((version, expressions, ids, flags)).encode()).hexdigest()


def digest(key: str, data: bytes) -> str:
    return hashlib.sha256(key.encode("ascii") + b"\0" + data).hexdigest()


def _read_bounded(path: Path) -> bytes:
    with path.open("rb") as handle:
        data = handle.read(MAX_DATABASE_BYTES + 1)
    if len(data) > MAX_DATABASE_BYTES:
        raise ValueError(f"{path} is larger than any database of the scrubber")
    return data


def missing_ids(hs: Any, database: Any, probes: Sequence[Probe]) -> set[int]:
    """The pattern ids whose probe text the database does not match (empty: it knows every answer)."""
    if not probes:
        return set()
    text = b"\n".join(sample for _, sample in probes) + b"\n"
    found: set[int] = set()

    def on_match(index: int, _start: int, _end: int, _flags: int, _context: object) -> None:
        found.add(index)

    database.scan(text, on_match, 0, None, hs.Scratch(database))
    return {index for index, _ in probes} - found


def sample(pattern: str, flags: int = 0) -> str | None:
    """A short text `pattern` matches from its start (one of many), made from its parse; None when this simple
    walk cannot make one (the caller then has no probe for that pattern)."""
    tree = regex_tree.parse_text(pattern, flags)
    if tree is None:
        return None
    try:
        text = _walk(tree)
    except (*regex_tree.TREE_ERRORS, StopIteration):
        return None
    return text if re.match(pattern, text, flags) else None


def _walk(items: Any) -> str:
    out = []
    for op, value in items:
        if op is OPS.LITERAL:
            out.append(chr(value))
        elif op is OPS.NOT_LITERAL:
            out.append(next(c for c in _OUTSIDE if ord(c) != value))
        elif op is OPS.ANY:
            out.append("a")
        elif op is OPS.IN:
            out.append(_member(value))
        elif op in (OPS.MAX_REPEAT, OPS.MIN_REPEAT):
            low, _high, inner = value
            out.append(_walk(inner) * low)
        elif op is OPS.SUBPATTERN:
            out.append(_walk(value[-1]))
        elif op is OPS.BRANCH:
            out.append(_walk(value[1][0]))
        elif op is not OPS.AT:  # anchors take no character
            raise ValueError(f"no sample for {op}")
    return "".join(out)


_CATEGORY_TESTS = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_SPACE": str.isspace,
}
# keyed by the parser's own opcode objects (none when the private parser is absent: no probes then)
_CATEGORIES = {getattr(OPS, name): test for name, test in _CATEGORY_TESTS.items()} if OPS is not None else {}


def _member(items: Any) -> str:
    """A character of a class `[…]` (or, negated, one outside it)."""
    negated = bool(items) and items[0][0] is OPS.NEGATE

    def inside(char: str) -> bool:
        for op, value in items:
            if op is OPS.LITERAL and ord(char) == value:
                return True
            if op is OPS.RANGE and value[0] <= ord(char) <= value[1]:
                return True
            if op is OPS.CATEGORY and _CATEGORIES.get(value, lambda c: False)(char):
                return True
        return False

    if negated:
        return next(c for c in _OUTSIDE if not inside(c))
    for op, value in items:
        if op is OPS.LITERAL:
            return chr(value)
        if op is OPS.RANGE:
            return chr(value[0])
    return next(c for c in "a0 _" if inside(c))
