"""Print every import that goes up a floor of the package (docs/architecture.md), with its floors.

The floors are data in tests/unit/package/test_import_graph.py (`FLOORS`, `FACE_MODULES`, `UPWARD`); this reads them
from there so the picture, the test and this count cannot disagree.

    python scripts/import_floors.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "package"))
from test_import_graph import UPWARD, floor_of, module_graph, upward_imports


def main() -> int:
    graph = module_graph(with_lambdas=True)
    upward = upward_imports(graph)
    for importer, imported in upward:
        why = UPWARD.get((importer, imported), "NOT LISTED: a misplaced import")
        print(f"{importer} ({floor_of(importer)}) -> {imported} ({floor_of(imported)}): {why}")
    edges = sum(len(targets) for targets in graph.values())
    print(f"{len(upward)} upward of {edges} imports among {len(graph)} modules")
    return 0 if all(pair in UPWARD for pair in upward) else 1


if __name__ == "__main__":
    raise SystemExit(main())
