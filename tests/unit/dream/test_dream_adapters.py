"""The dream's one archive and its one choice of adapters: the local folder and the bucket list, parse and
shelve the same records the same way (the viewer reads through the same port), and the assembly's
`dream_adapters` opens nothing a run does not use (that only the assembly reaches aws/ is
test_import_graph's layer rule)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from episodic.assembly.dream import dream_adapters
from episodic.dream.archive import DreamArchive, FolderArchive, LocalArchive
from episodic.dream.service import DreamRequest, dream
from episodic.dream.weeks import IsoWeek
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import Settings
from kits.dream_kit import ListWeekSource

W29, W30 = IsoWeek(2026, 29), IsoWeek(2026, 30)
RECORD = "---\nweek: 2026-W30\nsessions_analysed: 2\n---\n## Narrative of the Week\n- a week [abcdef12 2026-07-21]\n"


def _fill(archive: DreamArchive) -> None:
    archive.write("acme", W29, "record", RECORD.replace("W30", "W29"))
    archive.write("acme", W30, "record", RECORD)
    archive.write("acme", W30, "synthesis", "hand-off")
    archive.write_file("acme", "notes.json", json.dumps({"title": "Team notes", "week": "2026-W30", "n": 2}))
    archive.write_file("acme", "broken.json", "{not json")


def _shown(archive: DreamArchive) -> tuple[list[tuple[str, str, dict[str, object]]], list[str]]:
    shelf = archive.shelf("acme", most=10, max_bytes=10_000)
    return sorted((r.name, r.title, r.fields) for r in shelf.records), shelf.unreadable


def test_the_local_and_bucket_archives_list_parse_and_shelve_the_same_records(tmp_path: Path) -> None:
    from episodic.aws.dream_archive import S3Archive
    from moto import mock_aws

    local = LocalArchive(tmp_path / "dreams")
    _fill(local)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="transcripts")
        bucket = S3Archive(s3, "transcripts", "dreams/")
        _fill(bucket)
        for archive in (local, bucket):
            assert archive.weeks("acme") == [W29, W30] and archive.weeks("other") == []
            records = archive.records("acme", [W30])
            assert [r.week for r in records] == ["2026-W30"]
            assert records[0].citations() == [("abcdef12", "2026-07-21")]
            assert archive.read("acme", W30, "synthesis") == "hand-off"
        assert _shown(local) == _shown(bucket)
    shown, unreadable = _shown(local)
    assert ("notes.json", "Team notes", {"week": "2026-W30", "n": 2}) in shown
    assert ("2026-W30.md", "2026-W30", {}) in shown  # a markdown record: titled by its file
    assert unreadable == ["broken.json: not JSON (Expecting property name enclosed in double quotes)"]


def test_a_folder_archive_is_one_folder_whoever_the_tenant(tmp_path: Path) -> None:
    (tmp_path / "2026-W30.md").write_text(RECORD, encoding="utf-8")
    archive = FolderArchive(tmp_path)
    assert archive.weeks("alice") == archive.weeks("bob") == [W30]


def test_local_settings_choose_the_local_folder_and_open_nothing_until_used(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", tenant="alice")
    adapters = dream_adapters(settings)
    assert isinstance(adapters.archive, LocalArchive)
    assert adapters.archive.folder("alice") == tmp_path / "home" / "dreams" / "alice"
    assert adapters.model is None  # the heuristic distiller: offline
    with pytest.raises(ConfigError, match="no index at"):  # the index is opened by the run, not before
        dream(settings, DreamRequest(week="2026-W30"), adapters)


def test_an_offline_run_never_opens_the_model(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", tenant="alice", distiller="bedrock", embedder="hashing")
    adapters = dream_adapters(settings)
    opened: list[str] = []
    adapters.open_source = lambda: ListWeekSource([])
    adapters.open_model = lambda: opened.append("model")  # type: ignore[assignment,func-returns-value]
    run = dream(settings, DreamRequest(week="2026-W30", offline=True), adapters)
    assert [w.status for w in run.weeks] == ["empty"] and opened == []
    dream(settings, DreamRequest(week="2026-W30"), adapters)
    assert opened == ["model"]  # the same adapters, not offline: the model is opened
