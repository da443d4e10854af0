"""The scrubber's cached Hyperscan databases are checked before use: one replaced by another valid database (its
digest left, forged, or another of the scrubber's own databases with its own digest) is recompiled with a warning,
and `inspect --render` in a later process still redacts every secret; the run after that is quiet again.

Each test runs the CLI from an environment of its own (a venv whose site imports this checkout's), since the cache
lives beside the environment (`sys.prefix`)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from kits.secret_kit import AWS_KEY_ID, GITHUB_SPLIT

from .conftest import claude_messages

hyperscan = pytest.importorskip("hyperscan")

SESSION = "60606060-0000-4000-8000-000000000005"
PASSWORD = "Qx7vLp2ZmT9wRk4N"
KEPT = "Run the migrations again, then restart the worker and check the queue depth."
SECRETS = (AWS_KEY_ID, GITHUB_SPLIT, PASSWORD)
WARNING = "cached Hyperscan database"


def _environment(tmp_path: Path) -> Path:
    """A venv of its own (so a scrub cache of its own) that imports what this interpreter imports."""
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = (venv / "lib").glob("python*/site-packages")
    purelib = sysconfig.get_paths()["purelib"]
    (site / "parent.pth").write_text(f"import site; site.addsitedir({purelib!r})\n", encoding="utf-8")
    return venv


def _session(path: Path) -> None:
    texts = [
        f"the deploy fails; key id {AWS_KEY_ID}",  # a short text: the short texts' database
        f"{KEPT} Set DB_PASSWORD={PASSWORD} and push with {GITHUB_SPLIT} to the mirror, then rerun the deploy.",
    ]
    path.write_text(claude_messages(SESSION, [("user", text) for text in texts]), encoding="utf-8")


def _render(venv: Path, tmp_path: Path, transcript: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_") and k != "CLAUDE_CONFIG_DIR"}
    env.update({"EPISODIC_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user-home")})
    env["EPISODIC_EMBEDDER"] = "hashing"
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "episodic", "inspect", "--render", str(transcript)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The full key of each of the scrubber's databases (what an attacker computes from the code)."""
    from episodic.scrub import engine, hs_cache
    from episodic.scrub.scrubber import _Triggers

    keys: list[str] = []
    real = hs_cache.compiled

    def capture(hs: Any, expressions: list[bytes], ids: list[int], flags: list[int], probes: Any) -> Any:
        keys.append(hs_cache.cache_key(hs, expressions, ids, flags))
        return real(hs, expressions, ids, flags, probes)

    monkeypatch.setattr(hs_cache, "cache_dir", lambda: tmp_path / "capture-cache")
    monkeypatch.setattr(hs_cache, "compiled", capture)
    _Triggers("hyperscan")
    assert engine.hs_cache is hs_cache
    return keys


def _matching_nothing() -> bytes:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=[b"never-in-any-text-zq"], ids=[0], elements=1, flags=[0])
    return bytes(hyperscan.dumpb(database))


@pytest.mark.parametrize("swap", ["digest-kept", "digest-forged", "own-other-database"])
def test_a_swapped_cache_database_is_recompiled_and_secrets_stay_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    venv = _environment(tmp_path)
    transcript = tmp_path / "projects" / "-home-dev-app" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    _session(transcript)
    first = _render(venv, tmp_path, transcript)
    assert first.returncode == 0, first.stderr
    assert not any(secret in first.stdout for secret in SECRETS) and KEPT in first.stdout
    cache = venv / "share" / "episodic" / "scrub-cache"
    databases = sorted(cache.glob("*.hsdb"))
    assert len(databases) == 3

    if swap == "own-other-database":  # each database replaced by another of the scrubber's, with its digest
        pins = [db.with_suffix(".sha256") for db in databases]
        originals = [
            (db.read_bytes(), pin.read_bytes() if pin.exists() else b"")
            for db, pin in zip(databases, pins, strict=True)
        ]
        for db, pin, (data, digest) in zip(databases, pins, originals[1:] + originals[:1], strict=True):
            db.write_bytes(data)
            pin.write_bytes(digest)
    else:
        hostile = _matching_nothing()
        for db in databases:
            db.write_bytes(hostile)
        if swap == "digest-forged":  # the attacker computes each digest as the code does
            from episodic.scrub import hs_cache

            keys = {key[:32]: key for key in _keys(monkeypatch, tmp_path)}
            for db in databases:
                db.with_suffix(".sha256").write_text(
                    hs_cache.digest(keys[db.stem], hostile), encoding="ascii"
                )

    second = _render(venv, tmp_path, transcript)
    assert second.returncode == 0, second.stderr
    leaked = [secret for secret in SECRETS if secret in second.stdout]
    assert leaked == [], second.stdout
    assert "[REDACTED:aws-access-key]" in second.stdout and KEPT in second.stdout
    warnings = [line for line in second.stderr.splitlines() if WARNING in line]
    assert warnings and all("recompiled" in line for line in warnings), second.stderr

    third = _render(venv, tmp_path, transcript)  # the cache was rewritten: no warning, same output
    assert third.returncode == 0 and WARNING not in third.stderr, third.stderr
    assert third.stdout == second.stdout


def test_every_pattern_of_every_database_has_a_known_answer() -> None:
    """The known-answer scan covers the whole pattern set (a pattern without a sample could be dropped unseen)."""
    from episodic.scrub.scrubber import _Triggers

    search = _Triggers("hyperscan").search
    assert search.probed and all(probed == patterns for probed, patterns in search.probed), search.probed
