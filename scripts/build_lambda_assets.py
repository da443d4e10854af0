#!/usr/bin/env python3
"""Build the three Lambda assets into build/lambda/<name>/ exactly as `cdk synth` bundles them (for a look
inside or a size report); synth does not need this script.

    python scripts/build_lambda_assets.py                 # all functions, for the Lambda runtime (arm64, 3.13)
    python scripts/build_lambda_assets.py mcp             # one
    python scripts/build_lambda_assets.py --report        # sizes only
    python scripts/build_lambda_assets.py mcp --judge     # the MCP asset as `-c reranker=local` bundles it
    python scripts/build_lambda_assets.py --fetch-wheels  # fill the wheelhouse and install from it (scripts/install does it)
    python scripts/build_lambda_assets.py --fetch-wheels --host  # ... for this interpreter (the asset test)

Wheels come from build/wheelhouse/ (filled by `scripts/install --deploy`), so the build runs offline.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stacks.lambda_assets import (
    FUNCTIONS,
    LAMBDA,
    REPO_ROOT,
    build_asset,
    dependencies,
    fill_wheelhouse,
    judge_dependencies,
    size_of,
    this_interpreter,
)

BUILD_DIR = REPO_ROOT / "build" / "lambda"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("functions", nargs="*", choices=[*FUNCTIONS, []], help="default: all")
    parser.add_argument("--report", action="store_true", help="print the sizes of the built assets and exit")
    parser.add_argument("--fetch-wheels", action="store_true", help="download the wheels and exit")
    parser.add_argument("--host", action="store_true", help="for this interpreter, not the Lambda runtime")
    parser.add_argument(
        "--judge", action="store_true", help="the MCP asset carries the local judge (-c reranker=local)"
    )
    args = parser.parse_args(argv)
    platform = this_interpreter() if args.host else LAMBDA
    if args.fetch_wheels:
        print(f"wheels for {platform.tag} in {fill_wheelhouse(platform).relative_to(REPO_ROOT)}")
        # installed from them now, offline, once: the first synth (or asset test) then only links it
        print(f"installed for {platform.tag} in {dependencies(platform).relative_to(REPO_ROOT)}")
        print(f"the judge's for {platform.tag} in {judge_dependencies(platform).relative_to(REPO_ROOT)}")
        return 0
    names = args.functions or list(FUNCTIONS)
    for name in names:
        target = BUILD_DIR / name
        if not args.report:
            shutil.rmtree(target, ignore_errors=True)
            build_asset(name, target, platform, judge=args.judge and name == "mcp")
        if target.is_dir():
            print(f"{name:<11} {size_of(target) / 1e6:7.1f} MB unzipped  {target.relative_to(REPO_ROOT)}")
        else:
            print(f"{name:<11} not built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
