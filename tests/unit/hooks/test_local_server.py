"""The local server as setup sees it: answering, started and waited for, refusing the hook's token, off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from episodic.hooks import local_server
from episodic.hooks import prompt as hook
from episodic.kernel.settings import load_settings
from episodic.plumbing import autostart


def _down(*_: object) -> None:
    raise hook.ServerDown("fail: no server")


def test_a_server_that_answers_is_left_alone(episodic_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autostart, "start_local_server", lambda *a, **k: pytest.fail("started a second"))
    (episodic_home / "serve.pid").write_text(f"{os.getpid()}\n")  # a live process
    state = local_server.ensure_answering(load_settings(), "epi_x", ask=lambda *_: None)
    assert state.status == "answering" and state.pid == os.getpid()
    assert state.describe() == f"answering at http://127.0.0.1:8765/mcp (pid {os.getpid()})"


def test_none_answering_starts_one_and_waits_until_it_does(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[tuple[str, int]] = []
    monkeypatch.setattr(autostart, "start_local_server", lambda home, host, port: starts.append((host, port)))
    answers = iter([_down, _down, lambda *_: None])
    state = local_server.ensure_answering(load_settings(), "epi_x", ask=lambda *a: next(answers)(*a))
    assert state.status == "answering" and starts == [("127.0.0.1", 8765)]  # one start, however long


def test_a_server_that_never_comes_up_is_reported_as_starting(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(autostart, "start_local_server", lambda *a: None)
    state = local_server.ensure_answering(load_settings(), "epi_x", wait_seconds=0, ask=_down)
    assert state.status == "starting" and "did not answer within 0 s" in state.describe()


def test_a_refused_token_and_autostart_off_are_said(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object) -> None:
        raise hook.HookSkip("fail: server answered HTTP 401")

    state = local_server.ensure_answering(load_settings(), "epi_x", ask=refused)
    assert state.status == "refused" and "HTTP 401" in state.describe()
    monkeypatch.setenv("EPISODIC_HOOK_AUTOSTART", "false")
    monkeypatch.setattr(autostart, "start_local_server", lambda *a: pytest.fail("autostart is off"))
    state = local_server.ensure_answering(load_settings(), "epi_x", ask=_down)
    assert state.status == "off" and "hook_autostart is off" in state.describe()


def test_a_dead_pid_is_no_server(episodic_home: Path) -> None:
    (episodic_home / "serve.pid").write_text("999999999\n")
    assert local_server.recorded_pid(episodic_home) is None
    (episodic_home / "serve.pid").write_text("not a pid\n")
    assert local_server.recorded_pid(episodic_home) is None
