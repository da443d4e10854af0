"""The one place that reads the process environment and the config file (stdlib only).

`Settings` builds on it; the prompt hook uses it directly so its import path stays light.
"""

from __future__ import annotations

import contextlib
import os
import re
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


_TABLE_RE = re.compile(r"^\s*\[")


def write_config_value(path: Path, name: str, value: str | int) -> None:
    """Set a top-level key (a string, or an integer such as `port`) in the TOML config, keeping every
    other line; mode 0600 (it holds a token), atomic. ValueError, nothing changed, when that cannot be."""
    import tempfile
    import tomllib

    if isinstance(value, str) and not re.fullmatch(r"[A-Za-z0-9_.~-]*", value):
        raise ValueError(f"refusing to write an unquotable value for {name!r} into {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    first_table = next((i for i, line in enumerate(lines) if _TABLE_RE.match(line)), len(lines))
    key = re.compile(rf"^\s*{re.escape(name)}\s*=")
    top = [line for line in lines[:first_table] if not key.match(line)]
    written = f'"{value}"' if isinstance(value, str) else str(int(value))
    text = "\n".join([f"{name} = {written}", *top, *lines[first_table:]]) + "\n"
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}); fix it, nothing was changed") from exc
    if parsed.get(name) != value:
        raise ValueError(f"could not set {name!r} in {path}; nothing was changed")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", dir=path.parent)  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
