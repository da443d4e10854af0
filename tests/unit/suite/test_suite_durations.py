"""scripts/test_durations.py: a junit report -> seconds per test module (test classes folded into their
module, short modules left out), and tests/durations.json names only modules that exist."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "test_durations_script", REPO / "scripts" / "test_durations.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seconds_per_module_from_a_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "suite.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.functional.test_slow" name="a" time="30.5"/>'
        '<testcase classname="tests.functional.test_slow.TestGroup" name="b" time="2.0"/>'
        '<testcase classname="tests.unit.test_fast" name="c" time="0.2"/>'
        "</testsuite></testsuites>"
    )
    assert _script().module_seconds(report) == {"tests/functional/test_slow.py": 32.5}
    assert _script().main([str(tmp_path / "missing.xml")]) == 2


def test_the_committed_durations_name_existing_modules() -> None:
    seconds = json.loads((REPO / "tests" / "durations.json").read_text())
    assert len(seconds) > 20
    missing = [name for name in seconds if not (REPO / name).is_file()]
    assert not missing, f"regenerate tests/durations.json (scripts/test_durations.py): {missing}"
