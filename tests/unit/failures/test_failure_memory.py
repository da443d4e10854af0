"""Failure memory (issue 42): error signatures normalised so the same error matches across checkouts and days,
a session's fixes extracted from its trajectory, stored per tenant, and the one strong entry `lookup` gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.failures.extract import check_head, fixes_of
from episodic.failures.service import FailureMemory, lookup, remember_fixes, render_fix
from episodic.failures.signature import signature_of, signatures_of
from episodic.failures.sqlite_store import SQLiteFailureStore
from episodic.kernel.errors import TenantError
from episodic.kernel.models import Trajectory
from episodic.kernel.settings import load_settings
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import default_scrubber
from kits.session_builder import SessionWriter

GO_ERROR = "Exit code 1\n# example.com/shop/paths\n{path}:{line}:28: undefined: regexp\nFAIL\texample.com/shop/paths [build failed]"


def key(output: str) -> str:
    found = signature_of(output)
    assert found is not None, output
    return found.key


@pytest.mark.parametrize(
    ("one", "other", "shown"),
    [
        (  # paths and line numbers
            GO_ERROR.format(path="internal/paths/paths.go", line=149),
            GO_ERROR.format(path="/home/a/src/shop/paths.go", line=12),
            "undefined: regexp",
        ),
        (  # a temp folder, a hash and a time
            "Error: ENOENT: no such file or directory, open '/tmp/tmpk2x9q1ab/cache/5f2e9a1c3b7d/index.json'",
            "Error: ENOENT: no such file or directory, open '/var/folders/x/T/tmp0a1b2c3d/cache/a9f8e7d6c5b4/index.json'",
            "Error: ENOENT: no such file or directory, open",
        ),
        (  # a Python exception: the module's name is the error's own word
            'Traceback (most recent call last):\n  File "/srv/app/x.py", line 3, in <module>\n'
            "ModuleNotFoundError: No module named 'fastapi'",
            'Traceback (most recent call last):\n  File "C:\\\\work\\\\app\\\\y.py", line 41, in run\n'
            "ModuleNotFoundError: No module named 'fastapi'",
            "ModuleNotFoundError: No module named 'fastapi'",
        ),
        (  # a test runner's failure with its duration, a linter's finding behind a task runner's prefix
            "--- FAIL: TestParseCheckpoint (0.02s)",
            "--- FAIL: TestParseCheckpoint (1.71s)",
            "FAIL: TestParseCheckpoint",
        ),
        (
            "[lint:go] cmd/cli/debug.go:136:14: Error return value is not checked (errcheck)",
            "cmd/other/run.go:9:2: Error return value is not checked (errcheck)",
            "Error return value is not checked (errcheck)",
        ),
    ],
)
def test_the_same_error_elsewhere_has_the_same_signature(one: str, other: str, shown: str) -> None:
    assert key(one) == key(other)
    found = signature_of(one)
    assert found is not None and found.text.startswith(shown)


def test_identifiers_and_error_codes_stay_and_tell_errors_apart() -> None:
    assert key("src/a.ts(3,9): error TS2307: Cannot find module 'react'.") != key(
        "src/a.ts(3,9): error TS2307: Cannot find module 'vue'."
    )
    assert "TS2307" in key("src/a.ts(3,9): error TS2307: Cannot find module 'react'.").upper()
    assert key(GO_ERROR.format(path="p.go", line=1)) != key("p.go:1:1: undefined: strings")


def test_a_runners_wrapper_line_is_no_signature() -> None:
    assert signature_of("Exit code 1\n[lint] ERROR task failed\nmake: *** [all] Error 2") is None
    several = signatures_of(
        "a.go:1:1: undefined: x\nb.go:2:2: undefined: y\n2026/01/01 10:00:00 fatal: noise"
    )
    assert [s.text for s in several] == ["undefined: x", "undefined: y"]  # the best kind only


@pytest.mark.parametrize(
    ("command", "head"),
    [
        ("go test ./...", "go test"),
        ("cd /repo && mise run fmt && mise run lint 2>&1 | tail -20", "mise run lint"),
        ("CI=1 npx tsc --noEmit", "npx tsc"),
        ("python3 -m pytest tests/unit -q", "python3 -m pytest"),
        ("uv run pytest -x", "uv run pytest"),
    ],
)
def test_check_head_names_the_check(command: str, head: str) -> None:
    assert check_head(command) == head


def _session(folder: Path, session_id: str, day: str, *, passes: bool = True) -> Trajectory:
    writer = (
        SessionWriter(session_id, day, cwd="/home/dev/shop")
        .prompt("go test fails after I cleaned up the imports in the paths package")
        .tool(
            "Bash", {"command": "go test ./..."}, GO_ERROR.format(path="paths/paths.go", line=12), error=True
        )
        .reply("Let me look at the file.")
        .reply("The issue is that the regexp import was removed while a regex still uses it.")
        .tool(
            "Edit", {"file_path": "/home/dev/shop/paths/paths.go", "old_string": "a", "new_string": "b"}, "ok"
        )
    )
    if passes:
        writer.tool("Bash", {"command": "go test ./..."}, "ok  \texample.com/shop/paths\t0.012s")
    path = writer.write(folder / session_id)
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    (found,) = list(source.discover([str(path)]))
    loaded = source.load(found)
    assert isinstance(loaded, Trajectory)
    return loaded


def test_a_session_that_got_past_an_error_gives_one_fix(tmp_path: Path) -> None:
    (fix,) = fixes_of(_session(tmp_path, "s-fixed", "2026-02-15"), "alpha", default_scrubber())
    assert (fix.signature, fix.check, fix.passed_command) == ("undefined: regexp", "go test", "go test ./...")
    assert fix.edits == ["paths.go"]
    assert fix.diagnosis.startswith("The issue is that the regexp import was removed")
    assert (
        fixes_of(_session(tmp_path, "s-open", "2026-02-16", passes=False), "alpha", default_scrubber()) == []
    )


@pytest.fixture
def failures(tmp_path: Path) -> FailureMemory:
    settings = load_settings(home=tmp_path / "home", embedder="hashing")
    return FailureMemory(settings, SQLiteFailureStore(tmp_path / "failures.sqlite3"), default_scrubber())


def test_lookup_finds_the_fix_of_another_session_of_the_same_tenant_only(
    failures: FailureMemory, tmp_path: Path
) -> None:
    session = _session(tmp_path, "s-fixed", "2026-02-15")
    assert len(remember_fixes(failures, "alpha", session)) == 1
    assert (
        len(remember_fixes(failures, "alpha", session)) == 1 and failures.store.count("alpha") == 1
    )  # replaced
    error = GO_ERROR.format(path="/other/checkout/internal/paths/paths.go", line=149)
    found = lookup(failures, "alpha", "go test ./internal/...", error)
    assert found.fix is not None and found.fix.session_id == "s-fixed" and found.sessions == 1
    assert lookup(failures, "beta", "go test ./...", error).fix is None  # another tenant's memory
    assert lookup(failures, "alpha", "go test ./...", error, session_id="s-fixed").fix is None  # its own
    assert lookup(failures, "alpha", "go vet ./...", error).reason == "got past only with another check"
    unseen = lookup(failures, "alpha", "go test ./...", "x.go:1:1: undefined: neverSeenHelper")
    assert (unseen.fix, unseen.reason) == (None, "never got past in another session")
    with pytest.raises(TenantError):
        lookup(failures, "", "go test ./...", error)


def test_lookup_scrubs_the_failure_before_anything_and_refuses_a_generic_signature(
    failures: FailureMemory, tmp_path: Path
) -> None:
    remember_fixes(failures, "alpha", _session(tmp_path, "s-fixed", "2026-02-15"))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    found = lookup(
        failures, "alpha", f"GITHUB_TOKEN={secret} go test ./...", f"Error: bad credentials {secret}"
    )
    assert secret not in found.model_dump_json()
    assert lookup(failures, "alpha", "go test", "FAIL: x").reason == "signature too generic"


def test_the_entry_is_short_and_names_the_cause_the_end_the_check_and_the_session(
    failures: FailureMemory, tmp_path: Path
) -> None:
    (fix,) = remember_fixes(failures, "alpha", _session(tmp_path, "s-fixed", "2026-02-15"))
    text = render_fix(fix)
    assert len(text) <= 700
    for part in ("undefined: regexp", "regexp import was removed", "edited paths.go", "`go test ./...` passed",
                 "2026-02-15", "Session s-fixed of 2026-02-15 (get_episode"):  # fmt: skip
        assert part in text
    long = fix.model_copy(update={"diagnosis": "x" * 240})
    assert (
        "Session s-fixed of 2026-02-15 (get_episode" in render_fix(long, max_chars=400)
        and len(render_fix(long, max_chars=400)) <= 400
    )
