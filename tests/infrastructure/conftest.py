"""One synthesized app per module (synth is slow); every test reads the same template."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # app.py and stacks/ live at the repository root
    sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return context


@dataclass
class Synth:
    template: dict[str, Any]
    outdir: Path
    stack: Any
    assembly: Any

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def nag_violations(self) -> list[Any]:
        report = json.loads((self.outdir / "validation-report.json").read_text())
        return [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])]

    def cfn_lint_findings(self) -> list[str]:
        """cfn-lint's findings but CDK's redundant DependsOn (W3005) and the schema's lag on the index's
        documented TextSearchConfigurations (E3002)."""
        from cfnlint.api import ManualArgs, lint_file

        template = self.outdir / f"{self.stack.artifact_id}.template.json"
        matches = lint_file(Path(template), ManualArgs(regions=["us-east-1"]))
        return [
            f"{m.rule.id} {m.message}"
            for m in matches
            if m.rule.id != "W3005" and not (m.rule.id == "E3002" and "TextSearchConfigurations" in m.message)
        ]


def synth(outdir: Path, *, nag: bool = True, **context: Any) -> Synth:
    import aws_cdk as cdk

    from app import build_app

    app = cdk.App(context={**cdk_json_context(), "bundle": False, **context}, outdir=str(outdir))
    app, stack = build_app(app, nag=nag)
    assembly = app.synth()
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    return Synth(template=artifact.template, outdir=outdir, stack=stack, assembly=assembly)


@pytest.fixture(scope="session")
def default_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack as `cdk synth` builds it from cdk.json, with cdk-nag AwsSolutions checks on."""
    return synth(tmp_path_factory.mktemp("cdk-default"))


# what the Lambda Python runtime provides beside the standard library
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")


def runtime_folder(tmp_path: Path) -> Path:
    """boto3 and its dependencies only, linked from this venv: what the Lambda runtime adds to sys.path."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    for name in RUNTIME_PACKAGES:
        module = __import__(name)
        source = Path(module.__file__ or "")
        source = source.parent if source.name == "__init__.py" else source
        (folder / source.name).symlink_to(source)
    return folder


def run_from_asset_alone(script: str, asset: Path, tmp_path: Path, *args: str) -> dict[str, Any]:
    """`script` (argv: asset, runtime folder, *args) in a Python that sees only the asset, the runtime's boto3
    and the standard library; its last line of output, read as JSON."""
    result = subprocess.run(
        [
            sys.executable,
            "-I",  # no PYTHONPATH, no user site, not this checkout
            "-S",  # no site-packages: only the asset, the runtime's boto3 and the standard library
            "-c",
            script,
            str(asset),
            str(runtime_folder(tmp_path)),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report
