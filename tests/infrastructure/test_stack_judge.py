"""`-c reranker=local`: the MCP Lambda alone is told to judge and where its model sits in its asset; the
asset carries onnxruntime, tokenizers and the pinned model files (the other assets do not); cdk-nag and
cfn-lint stay clean; the judge loads and judges from an asset alone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template
from conftest import Synth, run_from_asset_alone, synth
from episodic.judge.model import FOLDER_NAME, MODEL_FILES, default_model_dir

from stacks import lambda_assets

MCP_HANDLER = "lambdas.mcp.handler.handler"
MODEL_IN_LAMBDA = f"/var/task/{FOLDER_NAME}"
needs_model = pytest.mark.skipif(
    not default_model_dir().is_dir(), reason="the judge's model is not installed (scripts/install)"
)

JUDGE_FROM_ASSET_ALONE = """
import json, sys
from pathlib import Path
asset, runtime = sys.argv[1], sys.argv[2]
sys.path[:0] = [asset, runtime]
import lambdas.mcp.handler
from episodic.judge.model import cross_encoder
logits = cross_encoder(Path(asset) / sys.argv[3]).scores(
    "pytest cannot import a module after it moved into a package",
    ["The tests imported the old module path; rewriting the imports to the new package fixed the run.",
     "A recipe for sourdough bread with a long cold proof."],
    160,
)
outside = sorted(
    name for name, m in sys.modules.items()
    if getattr(m, "__file__", None) and "site-packages" in m.__file__
)
print(json.dumps({"logits": [float(x) for x in logits], "outside": outside}))
"""


@pytest.fixture(scope="module")
def judge_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(tmp_path_factory.mktemp("cdk-judge"), reranker="local")


def _variables(fn: dict[str, object]) -> dict[str, str]:
    properties = fn["Properties"]
    assert isinstance(properties, dict)
    return dict(properties.get("Environment", {}).get("Variables", {}))


def test_the_mcp_lambda_alone_is_told_to_judge_and_where_the_model_is(
    judge_synth: Synth, default_synth: Synth
) -> None:
    Template.from_json(judge_synth.template).has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": MCP_HANDLER,
            "Environment": {
                "Variables": Match.object_like(
                    {"EPISODIC_RERANKER": "local", "EPISODIC_JUDGE_MODEL_DIR": MODEL_IN_LAMBDA}
                )
            },
        },
    )
    others = {
        fn["Properties"]["Handler"]: _variables(fn)
        for fn in judge_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] != MCP_HANDLER
    }
    before = {
        fn["Properties"]["Handler"]: _variables(fn)
        for fn in default_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] != MCP_HANDLER
    }
    assert others and others == before  # the other functions unchanged
    (mcp_default,) = [
        _variables(fn)
        for fn in default_synth.resources("AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] == MCP_HANDLER
    ]
    assert not {"EPISODIC_RERANKER", "EPISODIC_JUDGE_MODEL_DIR"} & set(mcp_default)  # off by default


def test_cdk_nag_and_cfn_lint_stay_clean_with_the_judge(judge_synth: Synth) -> None:
    assert judge_synth.nag_violations() == []
    assert judge_synth.cfn_lint_findings() == []


def test_the_stack_knows_the_judges_folder() -> None:
    assert lambda_assets.JUDGE_MODEL_FOLDER == FOLDER_NAME
    assert f"{lambda_assets.LAMBDA_TASK_ROOT}/{lambda_assets.JUDGE_MODEL_FOLDER}" == MODEL_IN_LAMBDA


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_model
def test_synth_puts_the_pinned_model_and_its_runtime_in_the_mcp_asset_only(tmp_path: Path) -> None:
    s = synth(tmp_path, nag=False, bundle=True, reranker="local")
    assets = json.loads((tmp_path / f"{s.stack.artifact_id}.assets.json").read_text())["files"]
    folders = [
        tmp_path / a["source"]["path"] for a in assets.values() if a["source"].get("packaging") == "zip"
    ]
    by_function = {next(p.name for p in (f / "lambdas").iterdir() if p.is_dir()): f for f in folders}
    assert set(by_function) == {"mcp", "distill", "authorizer"}
    mcp = by_function.pop("mcp")
    model = mcp / FOLDER_NAME
    assert {p.name: _sha256(p) for p in model.iterdir()} == MODEL_FILES
    assert list((mcp / "onnxruntime").rglob("*.so")) and (mcp / "tokenizers").is_dir()
    assert list((mcp / "onnxruntime" / "capi").glob("*cpython-313-aarch64-linux-gnu.so"))  # arm64 / 3.13
    size = lambda_assets.size_of(mcp)
    assert size < 250 * 1024 * 1024, f"{size / 1e6:.1f} MB: over Lambda's unzipped limit"
    for folder in by_function.values():
        assert not (folder / FOLDER_NAME).exists()
        assert not (folder / "onnxruntime").exists() and not (folder / "tokenizers").exists()


@needs_model
def test_without_the_context_no_asset_carries_the_judge(tmp_path: Path) -> None:
    asset = lambda_assets.build_asset("mcp", tmp_path / "mcp")
    assert not (asset / FOLDER_NAME).exists() and not (asset / "onnxruntime").exists()
    assert lambda_assets.content_hash("mcp") != lambda_assets.content_hash("mcp", judge=True)


@needs_model
def test_the_judge_loads_and_judges_from_the_mcp_asset_alone(tmp_path: Path) -> None:
    platform = lambda_assets.this_interpreter()
    asset = lambda_assets.build_asset("mcp", tmp_path / "mcp", platform, judge=True)
    report = run_from_asset_alone(JUDGE_FROM_ASSET_ALONE, asset, tmp_path, FOLDER_NAME)
    assert report["outside"] == []
    relevant, unrelated = report["logits"]
    assert relevant > unrelated + 2


def test_an_altered_model_is_refused_at_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "model"
    source.mkdir()
    for name in MODEL_FILES:
        (source / name).write_bytes(b"not the pinned file")
    monkeypatch.setenv("EPISODIC_JUDGE_MODEL_DIR", str(source))
    with pytest.raises(lambda_assets.MissingJudgeModelError, match="not the pinned"):
        lambda_assets.build_asset("mcp", tmp_path / "mcp", lambda_assets.this_interpreter(), judge=True)
    monkeypatch.setenv("EPISODIC_JUDGE_MODEL_DIR", str(tmp_path / "absent"))
    with pytest.raises(lambda_assets.MissingJudgeModelError, match=r"scripts/install"):
        lambda_assets.content_hash("mcp", judge=True)
