#!/usr/bin/env python3
"""Bundle the three Lambda assets without Docker: wheels for linux/arm64 + CPython 3.13, the core package
copied from shared/episodic, and the thin handler, into build/lambda/<name>/ (what the stack deploys).

    python scripts/build_lambda_assets.py            # all functions
    python scripts/build_lambda_assets.py mcp        # one
    python scripts/build_lambda_assets.py --report   # sizes only

boto3/botocore come with the Lambda runtime and are removed from the bundle; tokenizers/safetensors (the
local MiniLM embedder) are never installed: the Lambda path embeds with Titan.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_DIR = REPO_ROOT / "build" / "lambda"
FUNCTIONS = ("distill", "mcp", "authorizer")
# the core's runtime dependencies on the Lambda path (pyproject's list minus the local embedder's and the CLI's)
REQUIREMENTS = (
    "pydantic>=2.10",
    "pydantic-settings>=2.6",
    "numpy>=1.26",
    "jsonschema>=4.23",
    "aws-lambda-powertools[tracer]>=3.37",
)
PLATFORM_ARGS = (
    "--platform",
    "manylinux2014_aarch64",
    "--only-binary=:all:",
    "--python-version",
    "3.13",
    "--implementation",
    "cp",
)
# the Python runtime ships boto3 and its dependencies; aws-xray-sdk pulls them in again
PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "urllib3", "dateutil", "python_dateutil", "six")
NEVER_SHIP = ("tokenizers", "safetensors")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def _pip_install(target: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--target",
        str(target),
        *PLATFORM_ARGS,
        *REQUIREMENTS,
    ]
    subprocess.run(command, check=True)


def _prune(target: Path) -> None:
    for child in list(target.iterdir()):
        name = child.name.lower()
        top = name.split("-")[0].removesuffix(".py")
        if top in PROVIDED_BY_RUNTIME or top in NEVER_SHIP:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for tests in target.glob("numpy/**/tests"):
        shutil.rmtree(tests, ignore_errors=True)
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def _copy_code(target: Path, name: str) -> None:
    shutil.copytree(
        REPO_ROOT / "shared" / "episodic", target / "episodic", ignore=_IGNORE, dirs_exist_ok=True
    )
    lambdas = target / "lambdas"
    lambdas.mkdir(exist_ok=True)
    for shared_file in ("__init__.py", "runtime.py"):
        shutil.copy2(REPO_ROOT / "lambdas" / shared_file, lambdas / shared_file)
    shutil.copytree(REPO_ROOT / "lambdas" / name, lambdas / name, ignore=_IGNORE, dirs_exist_ok=True)


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build(name: str, dependencies: Path) -> Path:
    target = BUILD_DIR / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(dependencies, target)
    _copy_code(target, name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("functions", nargs="*", choices=[*FUNCTIONS, []], help="default: all")
    parser.add_argument("--report", action="store_true", help="print the sizes of the built assets and exit")
    args = parser.parse_args(argv)
    names = args.functions or list(FUNCTIONS)
    if not args.report:
        dependencies = BUILD_DIR / ".dependencies"
        shutil.rmtree(dependencies, ignore_errors=True)
        dependencies.mkdir(parents=True)
        _pip_install(dependencies)
        _prune(dependencies)
        for name in names:
            build(name, dependencies)
        shutil.rmtree(dependencies)
    for name in names:
        target = BUILD_DIR / name
        if target.is_dir():
            print(f"{name:<11} {size_of(target) / 1e6:7.1f} MB unzipped  {target.relative_to(REPO_ROOT)}")
        else:
            print(f"{name:<11} not built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
