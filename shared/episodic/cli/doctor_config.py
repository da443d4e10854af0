"""`doctor`'s look at the config file itself: keys no setting reads (a typo such as `prot = 9000` is
otherwise ignored; every command also warns of them on stderr)."""

from __future__ import annotations

from episodic.kernel.settings import config_warnings
from episodic.plumbing import envsource


def config_rows() -> list[tuple[str, str, str, str]]:
    """(name, status, detail, fix) rows for `doctor`: one warning for each unknown key, none when all is read."""
    path = envsource.config_path()
    fix = f"rename or remove it in {path} (docs/configuration.md lists every key)"
    return [
        ("config file", "warn", warning.removeprefix(f"config file {path}: "), fix)
        for warning in config_warnings(path)
    ]
