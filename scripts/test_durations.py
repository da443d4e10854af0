"""Write tests/durations.json from a junit report: each test module's measured seconds, which
tests/conftest.py uses to hand the longest modules to the workers first.

    .venv/bin/python -m pytest --junitxml=/tmp/suite.xml
    .venv/bin/python scripts/test_durations.py /tmp/suite.xml > tests/durations.json

xdist's `--dist loadfile` gives each worker whole modules in collection order; a minute-long module
handed out last keeps one worker busy while the other has nothing left (measured: 66 s of an 8-minute run).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

MIN_SECONDS = 1.0  # shorter modules keep their collection order: they fill the gaps at the end


def module_seconds(junit: Path) -> dict[str, float]:
    """`tests/functional/test_x.py` -> seconds, from the classname pytest writes (`tests.functional.test_x[.Class]`)."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(junit).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        module = [p for p in parts if not p[:1].isupper()]  # drop test classes
        if module:
            seconds["/".join(module) + ".py"] += float(case.get("time") or 0)
    return {name: round(s, 1) for name, s in seconds.most_common() if s >= MIN_SECONDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path, help="a junit XML report of a whole run (pytest --junitxml)")
    args = parser.parse_args(argv)
    if not args.junit.is_file():
        print(f"no such report: {args.junit}", file=sys.stderr)
        return 2
    json.dump(module_seconds(args.junit), sys.stdout, indent=0)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
