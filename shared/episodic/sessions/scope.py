"""Per-project scope: which projects are remembered (indexed, harvested) and where memory is injected.

Stdlib only: the prompt hook imports it. Rules come from the settings (`index_include`, `index_exclude`,
`inject_include`, `inject_exclude`: lists of paths or globs) and from a `.episodic` file in the repository
(the nearest one at or above the session's working directory), e.g.

    index = false    # sessions here are not remembered
    inject = false   # no memory is injected here

A user prompt holding `SKIP_MARKER` keeps that whole session out of the index (and out of harvest).

Precedence, most private first: the session's marker; the repository file saying `false`; a configured
exclude; the repository file saying `true`; a configured include list (when one is set, only what it
matches); else included. An unreadable or invalid `.episodic` file excludes (its author meant "no").
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

Purpose = Literal["index", "inject"]
REPO_FILE_NAME = ".episodic"
SKIP_MARKER = "episodic:skip"
SKIP_MARKER_RE = re.compile(r"(?<![\w:-])episodic:skip(?![\w-])", re.I)
SCOPE_REASON_PREFIX = "excluded by scope"  # NotEpisode reasons from the rules start with this
MAX_REPO_FILE_BYTES = 64 * 1024
MAX_ANCESTORS = 64
_GLOB_CHARS = frozenset("*?[")


class RepoFile(NamedTuple):
    """A `.episodic` file: its path and what it says (None: silent on that purpose)."""

    path: str
    says_index: bool | None = None
    says_inject: bool | None = None
    error: str = ""  # why it could not be read; such a file excludes both purposes


class Decision(NamedTuple):
    included: bool
    reason: str


class ScopeRules:
    """The configured include/exclude patterns for each purpose (no dataclasses: the hook starts fast)."""

    def __init__(
        self,
        index_include: Sequence[str] = (),
        index_exclude: Sequence[str] = (),
        inject_include: Sequence[str] = (),
        inject_exclude: Sequence[str] = (),
        *,
        repo_files: bool = True,  # look for `.episodic` files
    ) -> None:
        self.index_include = tuple(index_include)
        self.index_exclude = tuple(index_exclude)
        self.inject_include = tuple(inject_include)
        self.inject_exclude = tuple(inject_exclude)
        self.repo_files = repo_files
        self._cache: dict[str, RepoFile | None] = {}

    @classmethod
    def from_values(cls, get: Callable[[str], Any]) -> ScopeRules:
        """From a settings lookup: lists (config file, Settings) or comma strings (environment)."""
        return cls(*(patterns(get(name)) for name in RULE_NAMES))

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in RULE_NAMES)

    def include(self, purpose: Purpose) -> tuple[str, ...]:
        return self.index_include if purpose == "index" else self.inject_include

    def exclude(self, purpose: Purpose) -> tuple[str, ...]:
        return self.index_exclude if purpose == "index" else self.inject_exclude

    def repo_file(self, cwd: str) -> RepoFile | None:
        if not self.repo_files or not cwd:
            return None
        if cwd not in self._cache:
            self._cache[cwd] = find_repo_file(cwd)
        return self._cache[cwd]

    def decide(self, purpose: Purpose, cwd: str, prompts: Sequence[str] = ()) -> Decision:
        """Whether a session working in `cwd` (with these user prompts) is in scope for `purpose`."""
        if purpose == "index" and any(SKIP_MARKER_RE.search(p) for p in prompts):
            return Decision(False, f"{SCOPE_REASON_PREFIX}: a prompt holds the {SKIP_MARKER} marker")
        path = normalise(cwd) if cwd else ""
        repo = self.repo_file(path)
        if repo is not None and repo.error:
            return Decision(False, f"{SCOPE_REASON_PREFIX}: unreadable {repo.path} ({repo.error})")
        said = None if repo is None else (repo.says_index if purpose == "index" else repo.says_inject)
        if repo is not None and said is False:
            return Decision(False, f"{SCOPE_REASON_PREFIX}: {repo.path} ({purpose} = false)")
        hit = first_match(self.exclude(purpose), path)
        if hit is not None:
            return Decision(False, f"{SCOPE_REASON_PREFIX}: {purpose}_exclude {hit!r}")
        if repo is not None and said is True:
            return Decision(True, f"{repo.path} ({purpose} = true)")
        includes = self.include(purpose)
        if includes:
            hit = first_match(includes, path)
            if hit is None:
                where = "no working directory" if not path else "not matched"
                return Decision(False, f"{SCOPE_REASON_PREFIX}: {where} by {purpose}_include")
            return Decision(True, f"{purpose}_include {hit!r}")
        return Decision(True, "no rule excludes it")

    @staticmethod
    def why(decision: Decision) -> str:
        """The reason without the `excluded by scope: ` prefix (for lines that already say yes or no)."""
        return decision.reason.removeprefix(f"{SCOPE_REASON_PREFIX}: ")

    def describe(self) -> dict[str, list[str]]:
        return {name: list(getattr(self, name)) for name in RULE_NAMES}


RULE_NAMES = ("index_include", "index_exclude", "inject_include", "inject_exclude")


def patterns(value: Any) -> tuple[str, ...]:
    """A list of patterns from a list or a comma-separated string; anything else is none."""
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return ()
    return tuple(str(item).strip() for item in items if str(item).strip())


def normalise(path: str) -> str:
    return os.path.normpath(os.path.expanduser(path))


def _ancestors(path: str) -> list[str]:
    """The path and each of its parents, nearest first."""
    out = [path]
    while len(out) < MAX_ANCESTORS:
        parent = os.path.dirname(out[-1])
        if not parent or parent == out[-1]:
            break
        out.append(parent)
    return out


def matches(pattern: str, path: str) -> bool:
    """A pattern with no `/` names a directory anywhere on the path (`secret-*`, `acme`); a path (with `~`)
    covers itself and everything below it; a glob (`*` also crosses `/`) is matched against the path and
    each of its parents, so `~/work/client-*` covers the projects and their subfolders."""
    if not path:
        return False
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(os.path.basename(p), pattern) for p in _ancestors(path) if p != "/")
    target = normalise(pattern)
    if not _GLOB_CHARS & set(target):
        return path == target or path.startswith(target.rstrip("/") + "/")
    return any(fnmatch.fnmatchcase(p, target) for p in _ancestors(path))


def first_match(candidates: Sequence[str], path: str) -> str | None:
    return next((p for p in candidates if matches(p, path)), None)


def find_repo_file(cwd: str) -> RepoFile | None:
    """The nearest regular `.episodic` file at or above `cwd` (a `.episodic` folder, like the default
    home `~/.episodic`, is not one)."""
    for folder in _ancestors(normalise(cwd)):
        candidate = os.path.join(folder, REPO_FILE_NAME)
        if os.path.isfile(candidate):
            return read_repo_file(candidate)
    return None


def read_repo_file(path: str) -> RepoFile:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_REPO_FILE_BYTES + 1)
    except OSError as exc:
        return RepoFile(path, error=f"cannot read: {type(exc).__name__}")
    if len(raw) > MAX_REPO_FILE_BYTES:
        return RepoFile(path, error="larger than 64 KB")
    import tomllib  # only when a repository has the file

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return RepoFile(path, error=f"not valid TOML: {str(exc)[:80]}")
    values: dict[str, bool | None] = {}
    for key in ("index", "inject"):
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            return RepoFile(path, error=f"{key} must be true or false, got {value!r}")
        values[key] = value
    unknown = sorted(set(data) - {"index", "inject"})
    if unknown:
        return RepoFile(path, error=f"unknown keys {', '.join(unknown)} (only index and inject)")
    return RepoFile(path, says_index=values["index"], says_inject=values["inject"])


def rules_from_mapping(values: Mapping[str, Any]) -> ScopeRules:
    return ScopeRules.from_values(values.get)
