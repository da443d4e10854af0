"""The dream cycle on hand-built weeks: records written and kept, the gates on the record, the LLM path
with a stand-in model (recorded output shapes) and Bedrock through botocore's Stubber, failures that fail
the phase loudly, the archive on S3 (moto) and the MCP tool that serves the records."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import jsonschema
import pytest
from botocore.stub import ANY, Stubber
from episodic.aws.dream_archive import S3Archive
from episodic.aws.dream_llm import BedrockDreamModel
from episodic.dream.archive import LocalArchive
from episodic.dream.cycle import run_dream
from episodic.dream.exemplar import load_exemplar
from episodic.dream.extract import DreamPhaseError
from episodic.dream.port import DreamModel
from episodic.dream.record import SECTIONS, parse_record, section_items
from episodic.dream.tools import dream_tool
from episodic.dream.weeks import IsoWeek
from episodic.kernel.auth import Principal
from episodic.mcp.registry import ToolRegistry
from kits.dream_kit import ListWeekSource, bedrock_tool_reply, digest, export_thread

NOW = datetime(2026, 8, 12, tzinfo=UTC)
W30, W31 = IsoWeek(2026, 30), IsoWeek(2026, 31)
_SESSION_LINE = re.compile(r"^- session: (\S+)", re.M)


def week30() -> list:  # type: ignore[type-arg]
    return [
        *export_thread(),
        digest(
            "css10000",
            "2026-07-21T15:00:00",
            problem="diagram colours differ",
            files=["site/theme.css"],
            project="site",
        ),
        digest(
            "db100000",
            "2026-07-22T15:00:00",
            problem="upgrade the postgres driver",
            files=["db/x.go"],
            project="db",
            outcome="failed",
        ),
    ]


def week31() -> list:  # type: ignore[type-arg]
    return export_thread(prefix="nxt", days=(27, 28, 29, 30))  # the same theme again a week later


def dream(archive: LocalArchive, source: ListWeekSource, weeks: list[IsoWeek], **kw: Any):  # type: ignore[no-untyped-def]
    return run_dream(source, archive, "local", weeks, exemplar=load_exemplar(None), now=NOW, **kw)


def test_offline_records_with_sections_gates_citations_and_kept_records(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    source = ListWeekSource([*week30(), *week31()])
    run = dream(archive, source, [W30, W31])
    assert [w.status for w in run.weeks] == ["written", "written"]
    first = parse_record(archive.read("local", W30) or "")
    assert first.front["type"] == "dreaming-cycle" and first.front["mode"] == "offline"
    assert first.front["sessions_analysed"] == "6" and first.front["period"] == "2026-07-20 to 2026-07-26"
    for key, _ in SECTIONS:
        assert key in first.sections
    themes = section_items(first, "themes")
    assert len(themes) == 1 and "(score 0.9" in themes[0]  # the export thread, promoted with its score
    assert "PROMOTED" in run.weeks[0].explain and "gate sessions      pass" in run.weeks[0].explain
    ids = {d.session_id for d in source.digests}
    cited = first.cited_sessions()
    assert cited and set(cited.values()) <= ids
    assert {short for short, _ in first.citations()} <= set(cited)
    assert any("ended failed" in r.lower() for r in section_items(first, "risks"))
    assert "claims_without_citation: 0" in first.text
    assert any("Carry-over: resumed 3 time(s)" in u for u in section_items(first, "unfinished"))
    assert len(source.deep_reads) <= 8

    second = parse_record(archive.read("local", W31) or "")
    assert section_items(second, "themes") == []  # equivalent to W30's theme: held back by the third gate
    assert "gate not_recorded  FAIL" in run.weeks[1].explain
    synthesis = archive.read("local", W30, "synthesis") or ""
    assert "## Decisions Already Made (do not reopen)" in synthesis and "## Flags for Review" in synthesis
    assert archive.read("local", W30, "survey") is None  # regenerable: not kept unless asked

    again = dream(archive, source, [W30])
    assert again.weeks[0].status == "kept" and archive.read("local", W30) == first.text
    kept_survey = dream(archive, source, [W30], keep_survey=True)  # kept, and its survey written all the same
    assert kept_survey.weeks[0].status == "kept" and archive.read("local", W30) == first.text
    assert "- session: exp0000-aaaa-bbbb" in (archive.read("local", W30, "survey") or "")
    forced = dream(archive, source, [W30], force=True, keep_survey=True)
    assert forced.weeks[0].status == "replaced"
    survey = archive.read("local", W30, "survey") or ""
    assert "- session: exp0000-aaaa-bbbb" in survey and forced.weeks[0].phases["survey"]["sessions"] == 6


def test_a_week_without_sessions_gets_no_record_even_when_named(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    run = dream(archive, ListWeekSource(week30()), [W31])
    assert [w.status for w in run.weeks] == ["empty"] and run.weeks[0].written == []
    assert archive.weeks("local") == [] and archive.read("local", W31, "synthesis") is None


class StandInModel(DreamModel):
    """Answers in the recorded shapes of a real model's structured output; checks the schema it is sent."""

    id = "stand-in:recorded"

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_on = fail_on

    def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
        self.calls.append((system, prompt))
        if self.fail_on == len(self.calls):
            raise RuntimeError("ThrottlingException: Too many requests, please wait before trying again.")
        ids = _SESSION_LINE.findall(prompt)
        if schema.get("title") == "Narrative":
            found = re.findall(r'"sessions": \["([^"]+)"', prompt)
            answer: Any = {"sentences": [{"text": "The week was about the exporter.", "sessions": found[:2]}]}
        else:
            answer = {
                "label": "Transcript export",
                "summary": "the exporter and its review stage",
                "decisions": [{"text": "ship as one pull request", "sessions": ids[:1]}],
                "unfinished": [
                    {
                        "text": "empty-transcript state unspecified",
                        "sessions": ids[-1:],
                        "carry_over_cost": "review stops",
                    }
                ],
                "insights": [
                    {"text": "slowness came from re-reading the file", "sessions": ids[:1], "verified": True}
                ],
                "risks": [{"text": "a made-up claim", "sessions": ["ffffffff-not-in-this-thread"]}],
            }
        jsonschema.validate(answer, schema)
        return answer


def test_the_llm_path_writes_a_valid_record_and_drops_uncited_claims(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    model = StandInModel()
    run = dream(archive, ListWeekSource(week30()), [W30], model=model)
    parsed = parse_record(archive.read("local", W30) or "")
    assert parsed.front["mode"] == "llm:stand-in:recorded"
    assert "Offline record" not in parsed.text
    assert any(
        r.startswith("2026-07-20: ship as one pull request") for r in section_items(parsed, "decisions")
    )
    assert section_items(parsed, "narrative")[0].startswith("The week was about the exporter.")
    assert run.weeks[0].phases["extract"]["claims_dropped_uncited"] >= 1
    assert "a made-up claim" not in parsed.text
    for _system, prompt in model.calls:
        assert len(prompt) < 60_000  # a thread's survey blocks, never a transcript whole
    extracting = model.calls[0][1]  # the first thread's: its cards come first, the survey after
    assert extracting.index("THE THREAD'S CARDS") < extracting.index("THE THREAD'S SESSIONS")
    assert '"key_decisions": ["ship the export as one pull request (0)"]' in extracting


def test_a_failed_model_call_fails_the_phase_with_its_reason_and_writes_nothing(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    with pytest.raises(
        DreamPhaseError, match="extract phase failed: stand-in:recorded on thread 1: ThrottlingException"
    ):
        dream(archive, ListWeekSource(week30()), [W30], model=StandInModel(fail_on=1))
    assert archive.weeks("local") == []


def test_a_malformed_model_answer_fails_the_phase(tmp_path: Path) -> None:
    class Malformed(DreamModel):
        id = "stand-in:malformed"

        def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
            return {"summary": "no label"}

    with pytest.raises(DreamPhaseError, match="does not match the schema"):
        dream(LocalArchive(tmp_path), ListWeekSource(week30()), [W30], model=Malformed())


def test_bedrock_adapter_request_shape_and_throttling_through_stubber() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    model = BedrockDreamModel(client, "us.anthropic.claude-sonnet-4-6", sleep=lambda _s: None, attempts=2)
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "maxLength": 9}},
        "required": ["label"],
    }
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            bedrock_tool_reply({"label": "export"}),
            expected_params={
                "modelId": "us.anthropic.claude-sonnet-4-6",
                "system": [{"text": "sys"}],
                "messages": [{"role": "user", "content": [{"text": "prompt"}]}],
                "inferenceConfig": ANY,
                "toolConfig": ANY,
            },
        )
        assert model.complete("sys", "prompt", schema) == {"label": "export"}
        stub.add_client_error(
            "converse", service_error_code="ThrottlingException", service_message="slow down"
        )
        stub.add_client_error(
            "converse", service_error_code="ThrottlingException", service_message="slow down"
        )
        with pytest.raises(Exception, match="ThrottlingException after 2 attempts"):
            model.complete("sys", "prompt", schema)


def test_the_archive_on_s3_keeps_tenants_apart() -> None:
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="transcripts")
        archive = S3Archive(s3, "transcripts", "dreams/")
        where = archive.write("acme", W30, "record", "---\nweek: 2026-W30\n---\n")
        archive.write("acme", W30, "synthesis", "synth")
        assert where == "s3://transcripts/dreams/acme/2026-W30.md"
        assert archive.weeks("acme") == [W30] and archive.weeks("other") == []
        assert archive.read("acme", W30, "synthesis") == "synth" and archive.read("acme", W31) is None


def test_the_mcp_tool_returns_the_latest_or_a_given_weeks_record_for_the_callers_tenant(
    tmp_path: Path,
) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    dream(archive, ListWeekSource([*week30(), *week31()]), [W30, W31])
    registry = ToolRegistry([dream_tool(lambda: archive)])
    me = Principal(tenant_id="local")
    latest = registry.call("get_dream_record", {}, me)
    assert not latest["isError"] and latest["structuredContent"]["week"] == "2026-W31"
    assert latest["structuredContent"]["weeks_available"] == ["2026-W30", "2026-W31"]
    given = registry.call("get_dream_record", {"week": "2026-W30", "part": "synthesis"}, me)
    assert "dreaming-synthesis" in given["content"][0]["text"]
    missing = registry.call("get_dream_record", {"week": "2026-W10"}, me)
    assert missing["isError"] and "no dream record for 2026-W10" in missing["content"][0]["text"]
    other = registry.call("get_dream_record", {}, Principal(tenant_id="acme"))
    assert other["isError"] and "no dream record exists yet" in other["content"][0]["text"]
    bad = registry.call("get_dream_record", {"week": "last week"}, me)
    assert bad["isError"]


def test_the_cli_refuses_clearly_and_creates_nothing(episodic_home: Path) -> None:
    from click.testing import CliRunner
    from episodic.cli import build_cli

    runner = CliRunner()
    missing = runner.invoke(build_cli(), ["dream"])
    assert missing.exit_code == 1 and "no index at" in missing.output and "episodic index" in missing.output
    assert not (episodic_home / "index.sqlite3").exists()
    bad = runner.invoke(build_cli(), ["dream", "--week", "2026-30"])
    assert bad.exit_code == 1 and "is not an ISO week like 2026-W30" in bad.output
    both = runner.invoke(
        build_cli(), ["dream", "--week", "2026-W30", "--since", "2026-07-01", "--until", "2026-07-09"]
    )
    assert both.exit_code == 1 and "not both" in both.output
    page = runner.invoke(build_cli(), ["dream", "--html"])
    assert page.exit_code == 1 and "no dream records" in page.output


def test_the_synthesis_joins_weeks_by_meaning_and_says_first_record_only_for_the_first(
    tmp_path: Path,
) -> None:
    archive = LocalArchive(tmp_path / "dreams")
    source = ListWeekSource([*week30(), *week31()])
    dream(archive, source, [W30, W31])
    first = archive.read("local", W30, "synthesis") or ""
    second = archive.read("local", W31, "synthesis") or ""
    assert "First record: no earlier week to compare with." in first
    assert "First record" not in second
    recurs = [line for line in second.splitlines() if " from 2026-W30 " in line]
    assert recurs and all(re.search(r"similarity \d\.\d\d\)", line) for line in recurs)
    assert "terms" not in second
    quiet = LocalArchive(tmp_path / "quiet")  # an earlier record with no theme at all is still a record
    dream(
        quiet,
        ListWeekSource([digest("one00000", "2026-07-21T10:00:00", problem="diagram colours differ")]),
        [W30],
    )
    dream(quiet, source, [W31])
    later = quiet.read("local", W31, "synthesis") or ""
    assert "First record" not in later and "earlier record(s) (2026-W30 to 2026-W30" in later
