"""The dream's model adapters: Claude Code's CLI (the distiller's own flags, the dream's schema and system
prompt, a recorded result shape) and the schemas sent (no `$ref`, which structured-output APIs reject)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from episodic.distill.claude_code import ClaudeCodeDistiller, CliRun
from episodic.dream.llm import EXTRACT_SYSTEM, ClaudeCodeDreamModel, extract_schema, narrative_schema
from episodic.kernel.errors import DistillError

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "fake_claude" / "recorded" / "success.json"


def _model(answer: dict[str, Any], seen: list[list[str]], **result: Any) -> ClaudeCodeDreamModel:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))

    def runner(
        command: list[str], stdin: str, timeout: float, cwd: Path | None, env: object = None
    ) -> CliRun:
        seen.append(command)
        return CliRun(0, json.dumps({**recorded, "structured_output": answer, **result}), "")

    return ClaudeCodeDreamModel(ClaudeCodeDistiller(binary=sys.executable, runner=runner))


def test_claude_code_gets_the_dreams_schema_and_system_prompt_with_the_distillers_flags() -> None:
    seen: list[list[str]] = []
    answer = {"label": "export", "decisions": []}
    model = _model(answer, seen)
    assert model.complete(EXTRACT_SYSTEM, "the thread", extract_schema()) == answer
    *checks, command = seen  # the login check runs once before the first call (`claude auth status`)
    assert all("-p" not in check for check in checks)
    flags = [a for a in command if a.startswith("-")]
    assert flags == [a for a in ClaudeCodeDistiller().command("claude") if a.startswith("-")]
    assert json.loads(command[command.index("--json-schema") + 1]) == extract_schema()
    assert command[command.index("--system-prompt") + 1] == EXTRACT_SYSTEM
    assert command[command.index("--tools") + 1] == ""  # no tools: it reads, it does not act


def test_a_failed_claude_code_run_raises_with_its_reason() -> None:
    model = _model({}, [], is_error=True, subtype="error_during_execution", result="model overloaded today")
    with pytest.raises(DistillError, match="model overloaded today"):
        model.complete(EXTRACT_SYSTEM, "the thread", extract_schema())


def test_the_schemas_sent_have_no_refs() -> None:
    for schema in (extract_schema(), narrative_schema()):
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text
    assert set(extract_schema()["properties"]) == {
        "label",
        "summary",
        "decisions",
        "unfinished",
        "insights",
        "risks",
    }


def test_bedrock_without_a_region_is_a_config_error_naming_the_fix(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from episodic.assembly.dream import dream_adapters
    from episodic.kernel.errors import ConfigError
    from episodic.kernel.settings import load_settings

    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("EPISODIC_DISTILLER", "bedrock")
    with pytest.raises(ConfigError, match=r"no AWS region is set: set EPISODIC_AWS_REGION .* --offline"):
        dream_adapters(load_settings()).model  # noqa: B018 (opening the model is the act under test)


def test_the_extract_prompt_carries_the_threads_cards_before_the_survey() -> None:
    from episodic.dream.llm import cards_block, extract_prompt
    from kits.dream_kit import digest

    sessions = [
        digest(
            "s1", "2026-07-20T10:00:00", decisions=["keep the raw order of events, because replay needs it"]
        ),
        digest(
            "s2", "2026-07-21T10:00:00", insight="the exporter re-read the file per event", outcome="failed"
        ),
    ]
    cards = cards_block(sessions)
    rows = [json.loads(line) for line in cards.splitlines()]
    assert [r["session"] for r in rows] == ["s1", "s2"] and rows[1]["outcome"] == "failed"
    assert rows[0]["key_decisions"] == ["keep the raw order of events, because replay needs it"]
    assert rows[1]["insight"] == "the exporter re-read the file per event" and rows[0]["day"] == "2026-07-20"
    prompt = extract_prompt("### [s1 2026-07-20] …", "", cards)
    assert prompt.index("THE THREAD'S CARDS") < prompt.index("keep the raw order") < prompt.index("SESSIONS")
