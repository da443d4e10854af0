"""The unit tests mirror the package: `tests/unit/<concern>/test_*.py`, where `<concern>` is a folder of
`shared/episodic/`, so the tests of a module are found beside its folder's name; helpers live in `tests/kits/`."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
UNIT = TESTS / "unit"
PACKAGE = TESTS.parent / "shared" / "episodic"
# unit test folders that are not a concern of the package, each with its reason
OTHER_FOLDERS = {
    "package": "rules over the whole package (its layers, docstrings, the architecture page's hops)",
    "suite": "the test suite's own tools (tests/kits/warm_cli.py, scripts/test_durations.py)",
}


def concerns() -> set[str]:
    return {path.parent.name for path in PACKAGE.glob("*/__init__.py")}


def misplaced(unit: Path, allowed: set[str]) -> list[str]:
    """Every Python file under `unit` that is not a test module in an allowed folder."""
    return sorted(
        str(path.relative_to(unit))
        for path in unit.rglob("*.py")
        if "__pycache__" not in path.parts
        and not (
            len(path.relative_to(unit).parts) == 2
            and path.parent.name in allowed
            and path.name.startswith("test_")
        )
        and path.name != "conftest.py"
    )


def test_every_unit_test_sits_in_its_concern_folder() -> None:
    found = misplaced(UNIT, concerns() | set(OTHER_FOLDERS))
    assert not found, (
        f"move these into tests/unit/<concern>/ (a folder of shared/episodic/) or tests/kits/: {found}"
    )


def test_no_other_folder_shadows_a_concern() -> None:
    assert not set(OTHER_FOLDERS) & concerns()


def test_kits_sit_in_the_kits_folder() -> None:
    loose = sorted(path.name for path in TESTS.glob("*.py") if path.name != "conftest.py")
    assert not loose, f"helpers the tests share go to tests/kits/: {loose}"


def test_a_planted_flat_test_and_a_folder_outside_the_package_are_caught(tmp_path: Path) -> None:
    (tmp_path / "scrub").mkdir()
    (tmp_path / "scrub" / "test_ok.py").write_text("")
    (tmp_path / "test_flat.py").write_text("")
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "test_other.py").write_text("")
    (tmp_path / "scrub" / "helpers.py").write_text("")
    assert misplaced(tmp_path, concerns()) == ["misc/test_other.py", "scrub/helpers.py", "test_flat.py"]
