"""A name starting with `_` is its module's own: no other module of the package imports it (a shared name is public)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "shared" / "episodic"


def private_imports(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "episodic",
                root.name,
            ):
                found += [
                    f"{path.relative_to(root.parent)}:{node.lineno}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert not private_imports(PACKAGE)


def test_a_planted_private_import_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "episodic"
    package.mkdir()
    (package / "a.py").write_text("from episodic.b import _helper, public\n")
    assert private_imports(package) == ["episodic/a.py:1: episodic.b._helper"]
