"""The one place that reads the process environment and the config file (stdlib only).

`Settings` builds on it; the prompt hook uses it directly so its import path stays light.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_PREFIX = "EPISODIC_"
CONFIG_FILE_NAME = "config.toml"
CONFIG_ERROR = "\0config_error"  # light_values' key for why the config file could not be read
# variables owned by other tools that configure where transcripts live
FOREIGN_ENV = ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "HOME", "CODEX_HOME", "GEMINI_CLI_HOME")


def environ() -> Mapping[str, str]:
    """A snapshot of the environment (the only read of os.environ in the package)."""
    return dict(os.environ)


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    env = environ() if env is None else env
    raw = env.get(f"{ENV_PREFIX}HOME")
    if raw:
        return Path(raw).expanduser()
    user_home = env.get("HOME") or str(Path.home())
    return Path(user_home) / ".episodic"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = environ() if env is None else env
    raw = env.get(f"{ENV_PREFIX}CONFIG")
    return Path(raw).expanduser() if raw else home_dir(env) / CONFIG_FILE_NAME


def read_config_file(path: Path) -> dict[str, Any]:
    """The user config file as a dict; a missing file is empty, a broken one raises ValueError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"cannot read config file {path}: {exc}") from exc
    import tomllib  # only when a config file exists: keeps the hook's start-up light

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from exc


def prefixed(env: Mapping[str, str]) -> dict[str, str]:
    """EPISODIC_FOO_BAR=1 -> {"foo_bar": "1"}."""
    return {k[len(ENV_PREFIX) :].lower(): v for k, v in env.items() if k.startswith(ENV_PREFIX)}


def light_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings as plain values for light callers (the prompt hook): EPISODIC_* over the config file,
    the same order as `Settings`; a broken config file reads as empty, its error (file and line) kept under
    CONFIG_ERROR for the caller to report."""
    env = environ() if env is None else env
    values: dict[str, Any] = {}
    try:
        values.update(read_config_file(config_path(env)))
    except ValueError as exc:
        values[CONFIG_ERROR] = str(exc)
    values.update(prefixed(env))
    return values


def resolve(values: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """`name` from `light_values`, or the default when unset or empty."""
    value = values.get(name)
    return default if value is None or value == "" else value
