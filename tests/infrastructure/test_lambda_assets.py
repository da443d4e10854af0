"""The Lambda assets as synth bundles them: built offline from the wheelhouse, every handler importable from
its own folder alone (with the pinned boto3/botocore it ships, ahead of the runtime's), unchanged trees never
rebuilt, and the pinned botocore able to send S3 Vectors' hybrid query."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import run_from_asset_alone, synth
from episodic.aws.search_mode import TEXT_QUERY_PARAMETERS

from stacks import lambda_assets
from stacks.constructs import functions

IMPORT_ONLY_FROM_ASSET = """
import json, sys
asset, runtime = sys.argv[1], sys.argv[2]
sys.path[:0] = [asset, runtime]
import importlib
module = importlib.import_module(sys.argv[3])
assert callable(module.handler)
outside = sorted(
    name for name, m in sys.modules.items()
    if getattr(m, "__file__", None) and "site-packages" in m.__file__
)
print(json.dumps({"handler": module.handler.__module__, "outside": outside}))
"""


def _installed_version(folder: Path, package: str) -> str:
    (dist,) = folder.glob(f"{package}-*.dist-info")
    match = re.search(r"^Version: (\S+)$", (dist / "METADATA").read_text(), re.MULTILINE)
    assert match, dist
    return match.group(1)


def _service_model(wheel: Path, service: str) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [
            n
            for n in archive.namelist()
            if re.fullmatch(rf"botocore/data/{service}/[^/]+/service-2\.json(\.gz)?", n)
        ]
        raw = archive.read(name)
    return dict(json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw))


def _members(model: dict[str, Any], shape: str) -> set[str]:
    return set(model["shapes"][shape]["members"])


@pytest.mark.parametrize(
    "platform", [lambda_assets.LAMBDA, lambda_assets.this_interpreter()], ids=lambda p: p.tag
)
def test_the_pinned_botocore_can_send_the_s3_vectors_hybrid_query(platform: lambda_assets.Platform) -> None:
    # the wheel the asset is built from, read without importing it: its S3 Vectors model must know
    # QueryVectors' queryTexts/returnScores and GetIndex's indexMode (absent before botocore 1.44.8)
    assert lambda_assets.BOTOCORE_PIN in lambda_assets.REQUIREMENTS
    assert lambda_assets.BOTO3_PIN in lambda_assets.REQUIREMENTS
    (wheel,) = platform.wheelhouse.glob(f"botocore-{lambda_assets.BOTOCORE_VERSION}-*.whl")
    model = _service_model(wheel, "s3vectors")
    query_input = model["operations"]["QueryVectors"]["input"]["shape"]
    assert set(TEXT_QUERY_PARAMETERS) <= _members(model, query_input)
    index_output = model["operations"]["GetIndex"]["output"]["shape"]
    index_shape = model["shapes"][index_output]["members"]["index"]["shape"]
    assert "indexMode" in _members(model, index_shape)


@pytest.mark.parametrize("name", lambda_assets.FUNCTIONS)
def test_every_handler_imports_from_its_built_asset_alone(name: str, tmp_path: Path) -> None:
    # the same build the synth bundler runs, for this interpreter's wheels so that it can be imported here
    asset = lambda_assets.build_asset(name, tmp_path / name, lambda_assets.this_interpreter())
    # the asset's own boto3/botocore, at the pin: the runtime's copy may predate S3 Vectors' hybrid query
    assert (asset / "boto3").is_dir() and (asset / "botocore").is_dir()
    assert _installed_version(asset, "botocore") == lambda_assets.BOTOCORE_VERSION
    report = run_from_asset_alone(IMPORT_ONLY_FROM_ASSET, asset, tmp_path, f"lambdas.{name}.handler")
    assert report == {"handler": f"lambdas.{name}.handler", "outside": []}


def test_an_asset_links_the_dependency_tree_and_a_rebuild_never_writes_into_it(tmp_path: Path) -> None:
    platform = lambda_assets.this_interpreter()
    tree = lambda_assets.dependencies(platform)
    asset = lambda_assets.build_asset("mcp", tmp_path / "mcp", platform)
    (shared,) = [p.relative_to(tree) for p in tree.glob("botocore-*.dist-info/METADATA")]
    before = (tree / shared).read_bytes()
    assert (asset / shared).stat().st_ino == (tree / shared).stat().st_ino  # a link, not a 100 MB copy
    assert list(tree.glob("botocore/__pycache__/*.pyc"))  # built for this interpreter: bytecode kept
    (asset / shared).unlink()
    (asset / shared).write_text("edited in the asset folder")  # a file of its own, not the tree's
    (asset / "episodic" / "core" / "ingest.py").unlink()
    os.link(tree / shared, asset / "episodic" / "core" / "ingest.py")  # a code file's place taken by a link
    lambda_assets.build_asset("mcp", asset, platform)  # rebuilt over the existing folder
    assert (tree / shared).read_bytes() == before
    assert (asset / shared).read_bytes() == before
    source = lambda_assets.REPO_ROOT / "shared" / "episodic" / "core" / "ingest.py"
    assert (asset / "episodic" / "core" / "ingest.py").read_bytes() == source.read_bytes()
    assert (tree / shared).read_bytes() == before  # the code file replaced the link, not written through


def test_synth_bundles_every_asset_for_the_lambda_runtime_and_reuses_unchanged_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    build = lambda_assets.build_asset

    def counting_build(
        name: str, output_dir: Path, platform: lambda_assets.Platform, *, judge: bool = False
    ) -> Path:
        calls.append(name)
        return build(name, output_dir, platform, judge=judge)

    monkeypatch.setattr(lambda_assets, "build_asset", counting_build)
    first = synth(tmp_path, nag=False, bundle=True, dreaming=True)  # every function, the dream one too
    assert sorted(calls) == sorted(lambda_assets.FUNCTIONS)
    assets = json.loads((tmp_path / f"{first.stack.artifact_id}.assets.json").read_text())["files"]
    folders = [
        tmp_path / a["source"]["path"] for a in assets.values() if a["source"].get("packaging") == "zip"
    ]
    handlers = sorted(p.name for f in folders for p in (f / "lambdas").iterdir() if p.is_dir())
    assert handlers == sorted(lambda_assets.FUNCTIONS)
    for folder in folders:
        assert (folder / "episodic" / "core" / "ingest.py").is_file()
        assert list((folder / "numpy").rglob("*cpython-313-aarch64-linux-gnu.so"))  # arm64 / 3.13 wheels
        assert _installed_version(folder, "botocore") == lambda_assets.BOTOCORE_VERSION
        assert _installed_version(folder, "boto3") == lambda_assets.BOTOCORE_VERSION
        assert not (folder / "tokenizers").exists()

    second = synth(tmp_path, nag=False, bundle=True, dreaming=True)
    assert sorted(calls) == sorted(lambda_assets.FUNCTIONS)  # nothing rebuilt
    assert second.resources("AWS::Lambda::Function") == first.resources("AWS::Lambda::Function")


def test_the_content_hash_changes_with_any_code_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {name: lambda_assets.content_hash(name) for name in lambda_assets.FUNCTIONS}
    assert len(set(before.values())) == len(before)  # each function is its own asset
    copy = tmp_path / "repo"
    shutil.copytree(lambda_assets.REPO_ROOT / "shared" / "episodic", copy / "shared" / "episodic")
    shutil.copytree(lambda_assets.REPO_ROOT / "lambdas", copy / "lambdas")
    monkeypatch.setattr(lambda_assets, "REPO_ROOT", copy)
    assert {name: lambda_assets.content_hash(name) for name in lambda_assets.FUNCTIONS} == before
    (copy / "shared" / "episodic" / "__pycache__").mkdir(exist_ok=True)
    (copy / "shared" / "episodic" / "__pycache__" / "x.pyc").write_bytes(b"bytecode is not content")
    assert lambda_assets.content_hash("mcp") == before["mcp"]
    with (copy / "shared" / "episodic" / "core" / "ingest.py").open("a") as changed:
        changed.write("\n# changed\n")
    assert lambda_assets.content_hash("mcp") != before["mcp"]


def test_a_missing_handler_file_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(lambda_assets.REPO_ROOT / "shared" / "episodic", copy / "shared" / "episodic")
    (copy / "lambdas").mkdir()
    (copy / "lambdas" / "__init__.py").write_text("")
    monkeypatch.setattr(lambda_assets, "REPO_ROOT", copy)
    with pytest.raises(FileNotFoundError, match=r"lambdas/mcp is missing"):
        lambda_assets.content_hash("mcp")


def test_bundling_without_wheels_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aws_cdk as cdk

    from stacks.config import StackConfig

    monkeypatch.setattr(lambda_assets, "WHEELHOUSE_ROOT", tmp_path / "missing")
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(lambda_assets.MissingWheelsError, match=r"scripts/install --deploy"):
        functions.lambda_code(stack, StackConfig(bundle=True), "mcp")
