"""A configuration mistake as one line a user can act on: where the value came from (the config file, an
EPISODIC_* variable, a command's option), the key, and what is wrong with it; and the config file's keys
no setting reads (a typo such as `prot = 9000` is otherwise ignored without a word)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from episodic.plumbing import envsource


def _origin(key: str, overrides: Mapping[str, Any], env: Mapping[str, str], path: Path) -> tuple[str, str]:
    """Where the value of `key` came from, in the order Settings reads them, and its name there."""
    if overrides.get(key) is not None:
        return "a command option", key
    if key in envsource.prefixed(env):
        return "the environment", f"{envsource.ENV_PREFIX}{key.upper()}"
    return f"config file {path}", key


def _problem(error: Mapping[str, Any]) -> str:
    message = str(error.get("msg", "invalid"))
    message = message.removeprefix("Value error, ")  # a validator's own sentence
    return message[:1].lower() + message[1:]


def validation_message(exc: ValidationError, overrides: Mapping[str, Any]) -> str:
    """One line for every error in `exc`: `config file ~/.episodic/config.toml: port = 'abc': input should
    be a valid integer`; errors of several keys are joined by '; '."""
    env = envsource.environ()
    path = envsource.config_path(env)
    parts: list[str] = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ())]
        where, name = _origin(loc[0] if loc else "settings", overrides, env, path)
        shown = ".".join([name, *loc[1:]])
        value = f" = {error['input']!r}" if "input" in error and not isinstance(error["input"], dict) else ""
        parts.append(f"{where}: {shown}{value}: {_problem(error)}")
    return "; ".join(dict.fromkeys(parts))


def unknown_keys(known: Iterable[str], path: Path | None = None) -> list[str]:
    """A warning for each key of the config file that no setting reads (with the setting it is closest to);
    [] when the file is missing or unreadable (reading it reports that)."""
    path = path or envsource.config_path()
    try:
        values = envsource.read_config_file(path)
    except ValueError:
        return []
    names = sorted(known)
    warnings = []
    for key in values:
        if key in names:
            continue
        close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        warnings.append(f"config file {path}: unknown key {key!r} is ignored{hint}")
    return warnings
