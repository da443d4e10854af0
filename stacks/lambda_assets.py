"""How a Lambda asset folder is built (no Docker, no network): the core's Lambda dependencies installed from a
local wheelhouse (boto3/botocore too, pinned: the runtime's copy may predate the S3 Vectors API the store
uses), the `episodic` package, and the thin handler. Used by CDK local bundling during synth,
by `scripts/build_lambda_assets.py` and by the asset test, so all three build the same folder. With
`-c reranker=local` the MCP asset also carries the local judge: onnxruntime and tokenizers (from their own
wheelhouse folder, `judge/`) and the cross-encoder's model folder, copied from this machine's installed,
SHA-256-checked model.

The wheelhouse is filled once, while the network is there (`scripts/install --deploy` or `--dev`);
synth and tests then install from it offline.
"""

from __future__ import annotations

import hashlib
import os
import platform as host
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE_ROOT = REPO_ROOT / "build" / "wheelhouse"
DEPENDENCIES_ROOT = REPO_ROOT / "build" / "lambda-dependencies"
FUNCTIONS = ("distill", "mcp", "authorizer", "dream")
# the core's runtime dependencies on the Lambda path (pyproject's list minus the local embedder's and the CLI's)
BOTOCORE_VERSION = "1.44.8"
BOTO3_PIN = f"boto3=={BOTOCORE_VERSION}"  # boto3 and botocore share their version number
BOTOCORE_PIN = f"botocore=={BOTOCORE_VERSION}"
REQUIREMENTS = (
    "pydantic>=2.10",
    "pydantic-settings>=2.6",
    "numpy>=1.26",
    "jsonschema>=4.23",
    "aws-lambda-powertools[tracer]>=3.37",
    "opensearch-py==3.2.0",  # scratch memory / cards on OpenSearch Serverless (-c scratchMemory=opensearch)
    # pinned, not the runtime's: S3 Vectors' queryTexts/returnScores (hybrid search) and GetIndex's indexMode
    # arrived in botocore 1.44.8; an older runtime copy silently makes the store vector-only
    BOTO3_PIN,
    BOTOCORE_PIN,
)
NEVER_SHIP = (
    "tokenizers",  # the judge's, shipped only in its own tree (JUDGE_REQUIREMENTS)
    "safetensors",
    # opensearch-py's gRPC transport (opensearch-protobufs, grpcio, protobuf): the REST client never imports it
    "opensearch",
    "opensearch_protobufs",
    "grpc",
    "grpcio",
    "google",
    "protobuf",
)
# the local judge (episodic.judge) in the MCP asset with `-c reranker=local`, the versions it was measured with.
# --no-deps: its path (InferenceSession, Tokenizer.from_file) imports numpy only; onnxruntime's declared
# flatbuffers/packaging/protobuf and tokenizers' huggingface-hub serve conversion tools and the Hub download
JUDGE_REQUIREMENTS = ("onnxruntime==1.32.0", "tokenizers==0.23.3")
# mirrors episodic.judge.model.FOLDER_NAME (the stack stays core-free; a test checks they agree); in the asset
# at its root, so the function finds it at $LAMBDA_TASK_ROOT/<folder>
JUDGE_MODEL_FOLDER = "ms-marco-MiniLM-L-12-v2-int8"
LAMBDA_TASK_ROOT = "/var/task"
# the asset's own episodic package checks the copied model against its pins (pure Python: runs on any host)
_CHECK_MODEL = (
    "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
    "from episodic.judge.model import check_model_dir; check_model_dir(Path(sys.argv[2]))"
)
_SKIPPED_PARTS = ("__pycache__",)
_SKIPPED_SUFFIXES = (".pyc",)


class MissingWheelsError(RuntimeError):
    """The wheelhouse a build needs is empty: it is filled at install time, while the network is there."""


class MissingJudgeModelError(RuntimeError):
    """`-c reranker=local` without the judge's model installed (or not the pinned files) on this machine."""


@dataclass(frozen=True)
class Platform:
    """Whom the wheels are for: the Lambda runtime (arm64, CPython 3.13) or this interpreter (for tests)."""

    tag: str
    pip_args: tuple[str, ...]
    judge_pip_args: tuple[str, ...] = ()  # more platform tags the judge's wheels need

    @property
    def wheelhouse(self) -> Path:
        return WHEELHOUSE_ROOT / self.tag

    @property
    def judge_wheelhouse(self) -> Path:
        """Apart from the core's wheels, so that they change neither its dependency tree nor its hash."""
        return self.wheelhouse / "judge"

    @property
    def runs_here(self) -> bool:
        """Wheels for this very interpreter: the bytecode pip compiled while installing them is valid here."""
        return self.tag == this_interpreter().tag


LAMBDA = Platform(
    "lambda-arm64-cp313",
    (
        "--platform",
        "manylinux2014_aarch64",
        "--python-version",
        "3.13",
        "--implementation",
        "cp",
    ),
    # onnxruntime's aarch64 wheels are manylinux_2_28; the python3.13 runtime (Amazon Linux 2023) has glibc 2.34
    judge_pip_args=("--platform", "manylinux_2_28_aarch64"),
)


def this_interpreter() -> Platform:
    """Wheels this Python can import: the asset test imports every handler from a folder built for it."""
    return Platform(f"host-cp{sys.version_info.major}{sys.version_info.minor}-{host.machine().lower()}", ())


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def fill_wheelhouse(platform: Platform) -> Path:
    """Download the Lambda dependencies' wheels (network; install time only). Idempotent."""
    platform.wheelhouse.mkdir(parents=True, exist_ok=True)
    _pip(
        "download",
        "--quiet",
        "--only-binary=:all:",
        "--dest",
        str(platform.wheelhouse),
        *platform.pip_args,
        *REQUIREMENTS,
    )
    platform.judge_wheelhouse.mkdir(exist_ok=True)
    _pip(
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(platform.judge_wheelhouse),
        *platform.pip_args,
        *platform.judge_pip_args,
        *JUDGE_REQUIREMENTS,
    )
    return platform.wheelhouse


def _wheels(platform: Platform, judge: bool = False) -> list[str]:
    folder = platform.judge_wheelhouse if judge else platform.wheelhouse
    wheels = sorted(p.name for p in folder.glob("*.whl")) if folder.is_dir() else []
    if not wheels:
        raise MissingWheelsError(
            f"no wheels in {folder}: run `./scripts/install --deploy` once (it downloads the "
            "Lambda's dependencies for linux/arm64; synth then bundles offline, without Docker), "
            "or synth without assets: `npx cdk synth -c bundle=false`."
        )
    return wheels


def code_files(name: str) -> Iterator[tuple[str, Path]]:
    """(path inside the asset, source file) for the core package and the function's handler."""
    roots = (
        (REPO_ROOT / "shared" / "episodic", "episodic"),
        (REPO_ROOT / "lambdas" / name, f"lambdas/{name}"),
    )
    yield "lambdas/__init__.py", REPO_ROOT / "lambdas" / "__init__.py"
    for root, inside in roots:
        if not root.is_dir():
            raise FileNotFoundError(f"{root} is missing: cannot build the {name} Lambda asset")
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if (
                path.is_file()
                and not any(part in _SKIPPED_PARTS or part.endswith(".egg-info") for part in relative.parts)
                and not path.name.endswith(_SKIPPED_SUFFIXES)
            ):
                yield f"{inside}/{relative.as_posix()}", path


def _dependencies_hash(platform: Platform) -> str:
    digest = hashlib.sha256()
    keeps_bytecode = ("bytecode kept",) if platform.runs_here else ()  # the Lambda's hash is unchanged
    for part in (platform.tag, *platform.pip_args, *REQUIREMENTS, *NEVER_SHIP, *keeps_bytecode):
        digest.update(part.encode() + b"\0")
    for wheel in _wheels(platform):
        digest.update(wheel.encode() + b"\0")
    return digest.hexdigest()


def _judge_hash(platform: Platform) -> str:
    digest = hashlib.sha256()
    for part in (platform.tag, *platform.judge_pip_args, *JUDGE_REQUIREMENTS, *_wheels(platform, judge=True)):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def judge_model_source() -> Path:
    """This machine's installed model: where `episodic.judge.install` put it beside the interpreter
    (mirrors episodic.judge.model.default_model_dir), or EPISODIC_JUDGE_MODEL_DIR as the core reads it."""
    named = os.environ.get("EPISODIC_JUDGE_MODEL_DIR")
    return Path(named) if named else Path(sys.prefix) / "share" / "episodic" / JUDGE_MODEL_FOLDER


def _model_files(source: Path) -> list[Path]:
    files = sorted(p for p in source.iterdir() if p.is_file()) if source.is_dir() else []
    if not files:
        raise MissingJudgeModelError(
            f"-c reranker=local carries the judge's model in the MCP asset, and it is not installed at {source}: "
            "run `./scripts/install` (or `python -m episodic.judge.install`), or set EPISODIC_JUDGE_MODEL_DIR"
        )
    return files


def content_hash(name: str, platform: Platform = LAMBDA, *, judge: bool = False) -> str:
    """What the asset is made of: its code files' bytes and its dependency set (and with the judge its
    wheels and its model files' bytes). Unchanged hash, no rebuild."""
    digest = hashlib.sha256(_dependencies_hash(platform).encode())
    for inside, path in code_files(name):
        digest.update(inside.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    if judge:
        digest.update(_judge_hash(platform).encode())
        for path in _model_files(judge_model_source()):
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _prune(target: Path, platform: Platform, never_ship: tuple[str, ...]) -> None:
    for child in list(target.iterdir()):
        top = child.name.lower().split("-")[0].removesuffix(".py")
        if top in never_ship:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for tests in target.glob("numpy/**/tests"):
        shutil.rmtree(tests, ignore_errors=True)
    if platform.runs_here:
        return  # pip compiled with this interpreter: an import from the asset need not compile it again
    for cache in target.rglob("__pycache__"):  # compiled by the host's Python, never the one that runs it
        shutil.rmtree(cache, ignore_errors=True)


def dependencies(platform: Platform) -> Path:
    """The installed dependency tree for `platform`, built once per wheel set from the wheelhouse, offline."""
    target = DEPENDENCIES_ROOT / f"{platform.tag}-{_dependencies_hash(platform)[:16]}"
    return _installed(target, platform, platform.wheelhouse, (*platform.pip_args, *REQUIREMENTS), NEVER_SHIP)


def judge_dependencies(platform: Platform) -> Path:
    """onnxruntime and tokenizers for `platform`, without their declared dependencies (see JUDGE_REQUIREMENTS)."""
    target = DEPENDENCIES_ROOT / f"{platform.tag}-judge-{_judge_hash(platform)[:16]}"
    arguments = ("--no-deps", *platform.pip_args, *platform.judge_pip_args, *JUDGE_REQUIREMENTS)
    return _installed(target, platform, platform.judge_wheelhouse, arguments, never_ship=())


def _installed(
    target: Path,
    platform: Platform,
    wheelhouse: Path,
    arguments: tuple[str, ...],
    never_ship: tuple[str, ...],
) -> Path:
    if target.is_dir():
        return target
    DEPENDENCIES_ROOT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=DEPENDENCIES_ROOT, prefix=".building-") as tmp:
        staging = Path(tmp) / "site"
        _pip(
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            "--only-binary=:all:",
            "--target",
            str(staging),
            *arguments,
        )
        _prune(staging, platform, never_ship)
        try:
            os.replace(staging, target)  # atomic: a half-built tree is never reused
        except OSError:
            if not target.is_dir():  # another synth built the same tree first; otherwise a real error
                raise
    return target


def _link_or_copy(source: str, target: str) -> None:
    """A hard link to the shared dependency tree (about 100 MB and 3,700 files per asset), a copy across
    file systems. A file already at `target` is replaced, never written through: it may be such a link."""
    if os.path.lexists(target):
        os.unlink(target)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def build_asset(name: str, output_dir: Path, platform: Platform = LAMBDA, *, judge: bool = False) -> Path:
    """Fill `output_dir` with what the `name` Lambda runs: dependencies, `episodic/`, `lambdas/<name>/`; with
    `judge`, onnxruntime, tokenizers and the judge's model folder too (checked by the asset's own pins)."""
    if name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}: one of {FUNCTIONS}")
    output_dir.mkdir(parents=True, exist_ok=True)
    trees = (dependencies(platform), *((judge_dependencies(platform),) if judge else ()))
    for tree in trees:
        shutil.copytree(tree, output_dir, dirs_exist_ok=True, copy_function=_link_or_copy)
    for inside, path in code_files(name):
        target = output_dir / inside
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        shutil.copy2(path, target)
    if judge:
        _add_judge_model(output_dir)
    return output_dir


def _add_judge_model(output_dir: Path) -> None:
    model = output_dir / JUDGE_MODEL_FOLDER
    model.mkdir(exist_ok=True)
    for path in _model_files(judge_model_source()):
        _link_or_copy(str(path), str(model / path.name))
    checked = subprocess.run(
        [sys.executable, "-I", "-c", _CHECK_MODEL, str(output_dir), str(model)],
        capture_output=True,
        text=True,
        check=False,
    )
    if checked.returncode != 0:
        reason = (checked.stderr.strip().splitlines() or ["no output"])[-1]
        raise MissingJudgeModelError(f"the judge's model is not the pinned one: {reason}")


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
