"""Default roots come from Settings only; folder names never decide the project."""

from __future__ import annotations

import json
from pathlib import Path

from episodic.kernel.models import Trajectory
from episodic.kernel.settings import Settings
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.parse.discovery import default_roots
from episodic.parse.text import clean_user_text, cut_middle


def _claude_dir(path: Path) -> Path:
    (path / "projects").mkdir(parents=True)
    return path


def test_default_roots_follow_settings(tmp_path: Path) -> None:
    a = _claude_dir(tmp_path / "a")
    b = _claude_dir(tmp_path / "b")
    (tmp_path / "no-projects").mkdir()
    home = tmp_path / "home"
    xdg_default = _claude_dir(home / ".config" / "claude")
    dot = _claude_dir(home / ".claude")
    settings = Settings(claude_config_dir=f"{a}, {tmp_path / 'no-projects'},{b}", user_home=str(home))
    assert default_roots(settings) == [a, b, xdg_default, dot]
    xdg = _claude_dir(tmp_path / "xdg" / "claude")
    settings = Settings(xdg_config_home=str(tmp_path / "xdg"), user_home=str(home), claude_config_dir=str(a))
    assert default_roots(settings) == [a, xdg, dot]


def test_default_roots_skip_duplicates_and_missing(tmp_path: Path) -> None:
    dot = _claude_dir(tmp_path / ".claude")
    settings = Settings(claude_config_dir=str(dot), user_home=str(tmp_path))
    assert default_roots(settings) == [dot]
    assert default_roots(Settings(user_home=str(tmp_path / "nobody"))) == []


def test_discover_without_paths_uses_the_roots(tmp_path: Path) -> None:
    root = _claude_dir(tmp_path / "cfg")
    weird = root / "projects" / ("-Users-me-" + "ü" * 10 + "-" + "x" * 170 + "-1a2b3c")
    weird.mkdir()
    sid = "55555555-5555-4555-8555-555555555555"
    entry = {
        "type": "user",
        "uuid": "u",
        "sessionId": sid,
        "cwd": "/Users/me/ünï côde/my.app",
        "message": {"role": "user", "content": "hello"},
    }
    (weird / f"{sid}.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    source = ClaudeCodeSource(no_scrubber(), roots=[root])
    (found,) = source.discover()
    loaded = source.load(found)
    assert isinstance(loaded, Trajectory)
    assert loaded.project == "my.app" and loaded.cwd == "/Users/me/ünï côde/my.app"


def test_windows_cwd_project() -> None:
    from episodic.parse.text import last_path_component

    assert last_path_component("C:\\Users\\x\\proj") == "proj"
    assert last_path_component("/a/b/") == "b"


class _NoScrub:
    def scrub_counted(self, text: str, *, key: str | None = None) -> tuple[str, dict[str, int]]:
        return text, {}


def no_scrubber() -> _NoScrub:
    return _NoScrub()


def test_cut_middle_keeps_head_and_tail_and_whole_tokens() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    cut = cut_middle(text, 400)
    assert len(cut) <= 400 and cut.startswith("word0 ") and cut.endswith("word1999")
    assert "chars cut" in cut
    for token in cut.replace("\n", " ").split(" "):
        assert not token.startswith("word") or token[4:].isdigit()  # no token split in half
    assert cut_middle("short", 400) == "short"


def test_cut_never_leaves_half_a_key_at_the_edge() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    text = "a " * 95 + key + " b" * 400
    cut = cut_middle(text, 400)
    assert key in cut or "AKIA" not in cut


def test_clean_user_text() -> None:
    assert clean_user_text("[Request interrupted by user]").interrupt
    assert clean_user_text("<bash-input>ls</bash-input><bash-stdout>a</bash-stdout>").text == ""
    assert clean_user_text("hi <system-reminder>x</system-reminder>").text == "hi"
    assert clean_user_text("<command-name>/model</command-name><command-args></command-args>").text == ""
    assert clean_user_text("<command-name>/fix</command-name><command-args>the bug</command-args>").text == (
        "/fix the bug"
    )
