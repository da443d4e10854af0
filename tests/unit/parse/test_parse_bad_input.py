"""Bad input never crashes the parser: it gives a clear reason and counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from episodic.kernel.models import NotEpisode, ParseStats, SessionSource, Trajectory
from episodic.parse import reader
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.parse.reader import _cheap_skip
from episodic.plumbing import bounded
from episodic.plumbing.marker import DISTILLER_MARKER
from hypothesis import given, settings
from hypothesis import strategies as st

SID = "44444444-4444-4444-8444-444444444444"


class NoScrub:
    def scrub_counted(self, text: str, *, key: str | None = None) -> tuple[str, dict[str, int]]:
        return text, {}


def _load(tmp_path: Path, data: bytes, name: str = f"{SID}.jsonl") -> Trajectory | NotEpisode:
    path = tmp_path / name
    path.write_bytes(data)
    source = ClaudeCodeSource(NoScrub(), roots=[])
    (found,) = source.discover([str(tmp_path)])
    return source.load(found)


def _line(**entry: object) -> bytes:
    base = {"sessionId": SID, "cwd": "/w/proj", "timestamp": "2026-01-01T00:00:00Z", "isSidechain": False}
    return (json.dumps({**base, **entry}) + "\n").encode()


def _prompt(text: str, uuid: str = "u1") -> bytes:
    return _line(type="user", uuid=uuid, message={"role": "user", "content": text})


def _answer(text: str, uuid: str = "a1") -> bytes:
    return _line(
        type="assistant",
        uuid=uuid,
        message={
            "id": "m" + uuid,
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": text}],
        },
    )


def test_empty_file(tmp_path: Path) -> None:
    result = _load(tmp_path, b"")
    assert isinstance(result, NotEpisode) and result.reason == "empty"


def test_binary_garbage(tmp_path: Path) -> None:
    result = _load(tmp_path, os.urandom(4096).replace(b"\n", b"\x00") + b"\n" + b"\xff\xfe{{{\n")
    assert isinstance(result, NotEpisode) and result.reason == "malformed"
    assert result.stats.malformed_lines >= 1


def test_malformed_lines_are_counted_and_the_rest_kept(tmp_path: Path) -> None:
    result = _load(tmp_path, _prompt("fix the parser") + b"{not json\n[1,2]\n" + _answer("done"))
    assert isinstance(result, Trajectory) and result.request == "fix the parser"
    assert result.stats.malformed_lines == 2


def test_two_objects_on_one_line_are_both_read(tmp_path: Path) -> None:
    joined = _prompt("first").rstrip(b"\n") + _answer("second")
    result = _load(tmp_path, joined)
    assert isinstance(result, Trajectory) and result.closing_summary == "second"


def test_non_utf8_file(tmp_path: Path) -> None:
    latin1 = (
        '{"type":"user","uuid":"u1","sessionId":"%s","message":{"role":"user","content":"caf\xe9 broken"}}\n'
    )
    data = (latin1 % SID).encode("latin-1") + _answer("ok")
    result = _load(tmp_path, data)
    assert isinstance(result, Trajectory) and result.request.startswith("caf\ufffd")


def test_a_single_50mb_line(tmp_path: Path) -> None:
    huge = b'{"type":"user","message":{"role":"user","content":"' + b"x" * (50 * 1024 * 1024) + b'"}}\n'
    result = _load(tmp_path, huge + _answer("done"))
    assert isinstance(result, Trajectory)
    assert len(result.request) < 10_000  # cut before it reaches anything downstream


def test_a_50mb_garbage_line(tmp_path: Path) -> None:
    result = _load(tmp_path, b"{" + b"x" * (50 * 1024 * 1024) + b"\n")
    assert isinstance(result, NotEpisode) and result.reason == "malformed"


def test_unreadable_path(tmp_path: Path) -> None:
    source = SessionSource(session_key="gone", main_path=str(tmp_path / "missing.jsonl"))
    result = ClaudeCodeSource(NoScrub(), roots=[]).load(source)
    assert isinstance(result, NotEpisode) and result.reason == "unreadable"


def test_unreadable_subagent_is_counted_not_fatal(tmp_path: Path) -> None:
    main = tmp_path / f"{SID}.jsonl"
    main.write_bytes(_prompt("hello") + _answer("hi"))
    source = SessionSource(
        session_key=SID, main_path=str(main), subagent_paths=[str(tmp_path / "agent-x.jsonl")]
    )
    result = ClaudeCodeSource(NoScrub(), roots=[]).load(source)
    assert isinstance(result, Trajectory) and result.stats.skipped_entry_types["unreadable-subagent"] == 1


def test_snapshot_only(tmp_path: Path) -> None:
    data = (
        b'{"type":"summary","summary":"x","leafUuid":"l"}\n'
        + b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n'
    )
    result = _load(tmp_path, data)
    assert isinstance(result, NotEpisode) and result.reason == "snapshot-only"


def test_distiller_run(tmp_path: Path) -> None:
    result = _load(tmp_path, _prompt(DISTILLER_MARKER + "\nDistill this session") + _answer("{}"))
    assert isinstance(result, NotEpisode) and result.reason == "distiller-run"


@pytest.mark.parametrize(
    "prompt",
    [
        "Summarize this part of a conversation in 2-3 sentences. Use <summary></summary> tags.\n\nUser: hi",
        "Please write a concise summary of the following conversation.\nContext: This summary will be shown in a "
        "list to help users and Claude choose which conversations are relevant",
    ],
)
def test_memory_summariser(tmp_path: Path, prompt: str) -> None:
    result = _load(tmp_path, _prompt(prompt) + _answer("<summary>x</summary>"))
    assert isinstance(result, NotEpisode) and result.reason == "memory-summariser"


def test_a_user_asking_for_a_summary_with_real_work_is_an_episode(tmp_path: Path) -> None:
    use = _line(
        type="assistant",
        uuid="a0",
        message={
            "id": "m0",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "git log"}}],
        },
    )
    result = _load(
        tmp_path, _prompt("Summarize this conversation and then fix the bug") + use + _answer("done")
    )
    assert isinstance(result, Trajectory)


def test_codex_rollout_is_not_claude_code(tmp_path: Path) -> None:
    line = b'{"timestamp":"2026-02-23T12:41:04Z","type":"session_meta","payload":{"id":"x","cwd":"/w"}}\n'
    result = _load(tmp_path, line, name="rollout-2026-02-23T12-41-04-x.jsonl")
    assert isinstance(result, NotEpisode) and result.reason == "not-claude-code"


def test_pretty_printed_json_document_is_not_claude_code(tmp_path: Path) -> None:
    doc = json.dumps({"sessionId": SID, "messages": [{"type": "user", "content": "hi"}]}, indent=2).encode()
    result = _load(tmp_path, doc)
    assert isinstance(result, NotEpisode) and result.reason == "not-claude-code"


def test_only_noise_is_empty(tmp_path: Path) -> None:
    data = _prompt("<command-name>/clear</command-name><command-args></command-args>") + _line(
        type="user", uuid="u2", isMeta=True, message={"role": "user", "content": "Caveat: local commands"}
    )
    result = _load(tmp_path, data)
    assert isinstance(result, NotEpisode) and result.reason == "empty"


def test_cheap_skip_only_matches_the_envelope() -> None:
    assert _cheap_skip(b'{"parentUuid":null,"cwd":"/w","type":"progress","data":{"type":"x"}}') == "progress"
    assert _cheap_skip(b'{"type":"file-history-snapshot","messageId":"m"}') == "file-history-snapshot"
    nested = b'{"type":"user","message":{"content":[{"type":"progress","data":1}]},"x":{"type":"progress"}}'
    assert _cheap_skip(nested) is None
    in_text = b'{"type":"user","message":{"content":"say \\"type\\":\\"progress\\""}}'
    assert _cheap_skip(in_text) is None


def test_reader_without_orjson_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"type":"user","uuid":"a"}\n{"a":1}{"b":2}\n\xff{"x":1}\n{"big":1e400}\n{"cut":'
    with_orjson, stats = list(reader.iter_entries(data, ParseStats())), ParseStats()
    monkeypatch.setattr(reader, "orjson", None)  # the Lambda package ships no orjson
    assert list(reader.iter_entries(data, stats)) == with_orjson
    assert stats.lines == 5 and stats.malformed_lines == 1 and stats.truncated_last_line
    assert with_orjson[-1] == {"big": float("inf")}  # orjson refuses it: the stdlib reads it, as before


@pytest.mark.parametrize("with_orjson", [True, False])
def test_reader_cleans_lone_surrogates_on_every_decode_path(
    monkeypatch: pytest.MonkeyPatch, with_orjson: bool
) -> None:
    # orjson refuses a lone surrogate, so only the stdlib paths see one: each must clean what it decodes
    if not with_orjson:
        monkeypatch.setattr(reader, "orjson", None)
    pair = '{"type":"user","uuid":"p","text":"\\ud83d\\ude00"}'  # a valid pair: an emoji, kept as is
    data = (
        b'{"type":"user","uuid":"a","text":"x\\ud800y"}\n'
        b'{"a":"\\uDC00"}{"b":"ok"}\n'  # two objects on one line (a lost newline)
        + pair.encode()
        + b"\n  \r\n"
        + b'\t{"type":"user","uuid":"c"}\r\n'
    )
    entries = list(reader.iter_entries(data, stats := ParseStats()))
    assert [e.get("uuid") for e in entries] == ["a", None, None, "p", "c"]
    for entry in entries:
        for value in entry.values():
            value.encode("utf-8")  # no lone surrogate survives: every store can encode it
    assert "\ud800" not in entries[0]["text"] and entries[0]["text"].startswith("x")
    assert entries[3]["text"] == "\U0001f600"
    assert stats.lines == 4 and stats.malformed_lines == 0 and not stats.truncated_last_line


# keys whose value fails the pattern (empty, escaped, too long) before or after one that passes
_AGENT_FRAGMENTS = [b'"agentId":"', b'"agentId":""', b'"agentId":"a7e"', b'"', b"\\", b"x" * 60, b"\xff"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_AGENT_FRAGMENTS), st.binary(max_size=4)), max_size=12).map(b"".join),
    st.integers(0, 40),
    st.integers(0, 400),
)
def test_find_agent_id_is_the_regex_search(data: bytes, start: int, end: int) -> None:
    found, expected = reader._find_agent_id(data, start, end), reader._AGENT_ID_RE.search(data, start, end)
    assert (found and (found.span(), found.group(1))) == (expected and (expected.span(), expected.group(1)))


@pytest.mark.parametrize("size", [0, 1, 1 << 20, (1 << 20) + 1, (3 << 20) + 5])
def test_read_regular_reads_the_whole_file_up_to_the_cap(tmp_path: Path, size: int) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data := os.urandom(size))
    assert bounded.read_regular(path) == data
    assert bounded.read_regular(path, max_bytes=size) == data
    with pytest.raises(bounded.NotReadable):
        bounded.read_regular(path, max_bytes=size - 1)
