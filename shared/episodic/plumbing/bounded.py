"""Bounded reads of untrusted input: only regular files, at most a cap of bytes; JSON bounded in size and depth.

Stdlib only (the prompt hook imports it). A FIFO, a device (`/dev/zero` behind a symlink) or a socket
named `*.jsonl` is refused without blocking; JSON nested past MAX_JSON_DEPTH, or with a number too long
for `int()`, is a ValueError, never a RecursionError that escapes a per-line handler.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

DEFAULT_MAX_FILE_BYTES = 512 * 1024 * 1024  # far above the largest real transcript seen (tens of MB)
MAX_JSON_DEPTH = 64  # a JSON-RPC message or a transcript line nests a dozen levels at most
MAX_JSON_BYTES = 1_000_000


class NotReadable(OSError):
    """The path is not a regular file, or is larger than the cap (`reason` says which, for reports)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _open_regular(path: str | Path, follow_links: bool = True) -> tuple[int, int]:
    """(fd, size) of a regular file; O_NONBLOCK so opening a FIFO never waits for a writer; with
    `follow_links` false, a symlink as the last component is refused (O_NOFOLLOW)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    no_follow = 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | no_follow)
    except OSError as exc:
        if exc.errno == errno.ELOOP and no_follow:
            raise NotReadable("symlink", f"{path} is a symlink") from exc
        if exc.errno == errno.ELOOP:  # a symlink pointing (through others) at itself
            raise NotReadable("symlink-loop", f"{path} is a symlink loop") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable("not-a-regular-file", f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def _read_fd(fd: int, limit: int, size: int = 0) -> bytes:
    """Up to `limit` bytes, to the end of the file; a file of `size` bytes (fstat's) is read in one call,
    so the join returns that one chunk as it is (a file read in 1 MiB chunks was copied again, whole)."""
    chunks: list[bytes] = []
    left = limit
    step = max(size, 1 << 20)
    while left > 0:
        chunk = os.read(fd, min(left, step))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular(
    path: str | Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES, follow_links: bool = True
) -> bytes:
    """The whole file; NotReadable for anything but a regular file of at most max_bytes."""
    fd, size = _open_regular(path, follow_links)
    try:
        if size > max_bytes:
            raise NotReadable("too-large", f"{path} is {size} bytes, over the {max_bytes}-byte cap")
        data = _read_fd(fd, max_bytes + 1, size)  # a file growing while read is still capped
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise NotReadable("too-large", f"{path} grew past the {max_bytes}-byte cap while being read")
    return data


def read_head(path: str | Path, max_bytes: int, follow_links: bool = True) -> tuple[bytes, int]:
    """(the first max_bytes, the size) of a regular file; NotReadable otherwise."""
    fd, size = _open_regular(path, follow_links)
    try:
        return _read_fd(fd, max_bytes), size
    finally:
        os.close(fd)


def read_tail(path: str | Path, max_bytes: int) -> bytes:
    """The last max_bytes of a regular file, as long as it was when opened; NotReadable otherwise."""
    fd, size = _open_regular(path)
    try:
        start = max(size - max_bytes, 0)
        os.lseek(fd, start, os.SEEK_SET)
        return _read_fd(fd, size - start)
    finally:
        os.close(fd)


def json_depth_ok(value: Any, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """True when no container nests deeper than max_depth (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return True


def loads(text: str | bytes, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads bounded in size and depth; ValueError (json.JSONDecodeError is one) for anything bad."""
    if len(text) > max_bytes:
        raise ValueError(f"JSON text of {len(text)} bytes is over the {max_bytes}-byte limit")
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from exc
    # ValueError from json itself covers bad syntax and integers past sys.get_int_max_str_digits()
    if not json_depth_ok(value, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return value


def lone_surrogate_path(value: Any, where: str = "") -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, else None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return at or "(top level)"
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and not _encodable(key):
                    return f"{at}.{key!a}" if at else repr(key)
                stack.append((child, f"{at}.{key}" if at else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(item))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """The text with lone surrogates (e.g. `\\ud800` escapes, undecodable bytes) made U+FFFD."""
    if _encodable(text):
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def clean_obj(value: Any) -> Any:
    """The JSON value with every string (keys too) passed through clean_text (nesting is bounded)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_obj(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_obj(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """json.dumps that always yields encodable text (lone surrogates stay as \\u escapes)."""
    text = json.dumps(value, ensure_ascii=False)
    return text if _encodable(text) else json.dumps(value)
