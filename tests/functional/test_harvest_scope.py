"""Harvest honours the scope rules before anything is uploaded (moto S3): excluded projects, a repository's
`.episodic` file and the session marker upload nothing; lifting a rule uploads the session next run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.harvest import spool
from episodic.sessions.scope import SKIP_MARKER
from fakes.experiment_sessions import write_session
from moto import mock_aws

BUCKET = "scope-transcripts"
SHOP = "aaaaaaaa-2222-4000-8000-00000000000a"
SECRET = "bbbbbbbb-2222-4000-8000-00000000000b"
OPTED_OUT = "cccccccc-2222-4000-8000-00000000000c"
MARKED = "dddddddd-2222-4000-8000-00000000000d"


@pytest.fixture()
def env(episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    projects = tmp_path / "claude" / "projects"
    repo = tmp_path / "opted-out-repo"
    repo.mkdir()
    (repo / ".episodic").write_text("# committed by the team\nindex = false\n")
    run = {"failing_runs": 1, "verified": True}
    write_session(projects / "-work-shop", SHOP, cwd="/home/dev/shop", **run)
    write_session(projects / "-work-secret-client", SECRET, cwd="/home/dev/secret-client", **run)
    write_session(projects / "-opted-out-repo", OPTED_OUT, cwd=str(repo), **run)
    write_session(
        projects / "-work-shop",
        MARKED,
        cwd="/home/dev/shop",
        prompt=f"{SKIP_MARKER} the cart total is wrong",
        **run,
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(projects.parent))
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield {"home": episodic_home, "s3": s3, "projects": projects, "repo": repo}


def _harvest(*extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        build_cli(),
        ["harvest", "--bucket", BUCKET, "--tenant", "alice", "--json", *extra],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _uploaded(s3: Any) -> list[str]:
    return sorted(o["Key"].rsplit("/", 1)[1] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_excluded_projects_are_never_uploaded(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_INDEX_EXCLUDE", "/home/dev/secret-*")
    data = _harvest()
    assert data["uploaded_sessions"] == [SHOP]
    assert _uploaded(env["s3"]) == [f"{SHOP}.jsonl"]
    skipped = data["skipped"]
    assert skipped["not an episode: excluded by scope: index_exclude '/home/dev/secret-*'"] == 1
    assert skipped[f"not an episode: excluded by scope: {env['repo'] / '.episodic'} (index = false)"] == 1
    assert skipped[f"not an episode: excluded by scope: a prompt holds the {SKIP_MARKER} marker"] == 1

    monkeypatch.delenv("EPISODIC_INDEX_EXCLUDE")  # the rule lifted: the project's session goes next run
    again = _harvest()
    assert again["uploaded_sessions"] == [SECRET]
    assert _uploaded(env["s3"]) == [f"{SHOP}.jsonl", f"{SECRET}.jsonl"]


def test_an_include_list_uploads_only_what_it_names(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_INDEX_INCLUDE", "shop")
    dry = _harvest("--dry-run")
    assert dry["uploaded_sessions"] == [SHOP] and _uploaded(env["s3"]) == []
    assert _harvest()["uploaded_sessions"] == [SHOP]


def test_the_session_end_queue_honours_the_rules(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_INDEX_EXCLUDE", "secret-client")
    for folder, sid in (("-work-secret-client", SECRET), ("-work-shop", SHOP)):
        spool.append_entry(env["home"], str(env["projects"] / folder / f"{sid}.jsonl"), sid)
    result = CliRunner().invoke(
        build_cli(), ["harvest", "--bucket", BUCKET, "--tenant", "alice", "--from-spool", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert _uploaded(env["s3"]) == [f"{SHOP}.jsonl"]


def test_harvest_measures_the_sessions_the_experiment_logged(env: dict[str, Any]) -> None:
    # the AWS deployment distils in the cloud: the experiment's measures are taken here, at harvest
    from episodic.experiment import holdout, measures

    holdout.decide(
        {"session_id": SHOP}, [{"session_id": "x", "similarity": 0.7}], lambda n, d=None: d, env["home"]
    )
    _harvest()
    assert list(measures.load_all(env["home"])) == [SHOP]
    assert measures.load_all(env["home"])[SHOP].verified is True
