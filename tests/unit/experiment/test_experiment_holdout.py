"""The holdout decision: per session, the configured share within tolerance, off when asked; the hook
withholds memory in the holdout arm and logs ids and similarities only (never the prompt or a secret)."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from episodic.experiment import holdout
from episodic.kernel.settings import Settings
from fakes.harvest_sessions import SECRETS
from unit.hooks.test_hook_faults import PROMPT, log_lines, run_hook


def _setting(values: dict[str, Any]) -> Any:
    return lambda name, default=None: values.get(name, default)


def _uuids(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "-".join(f"{rng.getrandbits(bits):0{bits // 4}x}" for bits in (32, 16, 16, 16, 48)) for _ in range(n)
    ]


@pytest.mark.parametrize("share", [0.1, 0.25, 0.5])
def test_the_holdout_share_is_honoured_within_tolerance(share: float) -> None:
    ids = _uuids(20_000, seed=int(share * 100))
    held = sum(holdout.arm_for(sid, share) == "without" for sid in ids) / len(ids)
    assert abs(held - share) < 0.015, held  # 3.5 standard errors at n = 20,000 and share 0.5


def test_a_session_is_wholly_in_one_arm(tmp_path: Path) -> None:
    setting = _setting({})
    for sid in _uuids(50, seed=1):
        arms = {
            holdout.decide({"session_id": sid}, [{"session_id": "x", "similarity": 0.6}], setting, tmp_path)
            for _ in range(3)
        }
        assert len(arms) == 1
    entries = list(holdout.read_log(tmp_path))
    assert len(entries) == 150
    by_session: dict[str, set[str]] = {}
    for entry in entries:
        by_session.setdefault(entry["session_id"], set()).add(entry["arm"])
    assert all(len(arms) == 1 for arms in by_session.values())


def test_prior_attempts_alone_make_a_prompt_eligible_and_are_withheld_alike(tmp_path: Path) -> None:
    setting = _setting({})
    without = _session_in("without")
    assert holdout.decide({"session_id": without}, [], setting, tmp_path) is None  # nothing to inject
    assert holdout.decide({"session_id": without}, [], setting, tmp_path, scratch=True) == "without"
    (entry,) = holdout.read_log(tmp_path)
    assert entry["would_inject"] == [] and entry["would_inject_prior_attempts"] is True


def test_off_means_memory_for_every_prompt_and_no_log(tmp_path: Path) -> None:
    hits = [{"session_id": "x", "similarity": 0.6}]
    for values in ({"experiment_enabled": "false"}, {"experiment_enabled": False}, {"experiment_holdout": 0}):
        decided = [
            holdout.decide({"session_id": sid}, hits, _setting(values), tmp_path) for sid in _uuids(200, 2)
        ]
        assert "without" not in decided
    assert holdout.decide({"session_id": "../../etc"}, hits, _setting({}), tmp_path) is None  # no usable id
    assert holdout.decide({}, hits, _setting({}), tmp_path) is None
    assert holdout.holdout_share(_setting({"experiment_holdout": "lots"})) == holdout.DEFAULT_HOLDOUT
    assert holdout.holdout_share(_setting({"experiment_holdout": 0.9})) == holdout.DEFAULT_HOLDOUT


def test_the_hooks_defaults_mirror_the_settings() -> None:
    fields = Settings.model_fields
    assert fields["experiment_holdout"].default == holdout.DEFAULT_HOLDOUT
    assert fields["experiment_enabled"].default is True


CARD_TEXT = "the cart total double-counted the coupon-discount-xyzzy"


def _hit_body() -> bytes:
    hit = {
        "session_id": "old-episode-1",
        "project": "shop",
        "date": "2026-01-12",
        "score": 0.8,
        "similarity": 0.734567,
        "confidence": "strong",
        "card": {
            "problem": CARD_TEXT + " " + SECRETS["github-token"],
            "insight": "apply the coupon after the discount",
            "outcome": "verified",
        },
    }
    answer = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"structuredContent": {"results": [hit]}, "isError": False},
    }
    return json.dumps(answer).encode()


@pytest.fixture()
def search_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = _hit_body()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    httpd.shutdown()
    httpd.server_close()


def _session_in(arm: str) -> str:
    return next(sid for sid in _uuids(1000, 3) if holdout.arm_for(sid, holdout.DEFAULT_HOLDOUT) == arm)


def _stdin(session_id: str, prompt: str, cwd: str = "/home/dev/shop") -> str:
    return json.dumps(
        {"session_id": session_id, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    )


def test_the_hook_withholds_memory_in_the_holdout_arm_only(tmp_path: Path, search_server: str) -> None:
    home = tmp_path / "home"
    on = {"EPISODIC_EXPERIMENT_ENABLED": "true"}
    code, held_out, _ = run_hook(home, _stdin(_session_in("without"), PROMPT), search_server, **on)
    assert (code, held_out) == (0, "")
    code, injected, _ = run_hook(home, _stdin(_session_in("with"), PROMPT), search_server, **on)
    assert code == 0 and CARD_TEXT in json.loads(injected)["hookSpecificOutput"]["additionalContext"]
    lines = log_lines(home)
    assert "holdout session (experiment): withheld 1 episode(s)" in lines[0] and "injected 1" in lines[1]
    entries = list(holdout.read_log(home))
    assert [e["arm"] for e in entries] == ["without", "with"]
    assert entries[0]["would_inject"] == [{"session_id": "old-episode-1", "similarity": 0.7346}]


def test_the_experiment_log_never_holds_the_prompt_or_a_secret(tmp_path: Path, search_server: str) -> None:
    home = tmp_path / "home"
    secrets = " ".join(SECRETS.values())
    prompt = f"quixotic-marker-words: the cart total is wrong, my keys are {secrets}"
    for arm in ("with", "without"):
        run_hook(
            home,
            _stdin(_session_in(arm), prompt, cwd="/home/dev/client-acme-secret"),
            search_server,
            EPISODIC_EXPERIMENT_ENABLED="true",
        )
    raw = holdout.log_path(home).read_text()
    assert len(raw.splitlines()) == 2
    for forbidden in ("quixotic", "cart total", CARD_TEXT, "client-acme", "coupon", *SECRETS.values()):
        assert forbidden not in raw, forbidden
    for line in raw.splitlines():
        assert set(json.loads(line)) == {
            "at",
            "session_id",
            "arm",
            "holdout",
            "would_inject",
            "would_inject_prior_attempts",
        }


def test_injection_excluded_by_scope_is_not_an_eligible_prompt(tmp_path: Path, search_server: str) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / ".episodic").write_text("inject = false\n")
    on = {"EPISODIC_EXPERIMENT_ENABLED": "true"}
    code, out, _ = run_hook(
        home, _stdin(_session_in("with"), PROMPT, cwd=str(repo / "sub")), search_server, **on
    )
    assert (code, out) == (0, "")
    code, out, _ = run_hook(
        home,
        _stdin(_session_in("with"), PROMPT, cwd="/srv/code/secret-client/app"),
        search_server,
        EPISODIC_INJECT_EXCLUDE="secret-*",
        **on,
    )
    assert (code, out) == (0, "")
    code, out, _ = run_hook(
        home,
        _stdin(_session_in("with"), PROMPT, cwd="/srv/code/other"),
        search_server,
        EPISODIC_INJECT_INCLUDE="/srv/code/chosen",
        **on,
    )
    assert (code, out) == (0, "")
    lines = log_lines(home)
    assert "(inject = false)" in lines[0] and "inject_exclude 'secret-*'" in lines[1]
    assert "not matched by inject_include" in lines[2]
    assert not holdout.log_path(home).exists()  # never eligible: nothing logged
    code, out, _ = run_hook(
        home,
        _stdin(_session_in("with"), PROMPT, cwd="/srv/code/chosen/app"),
        search_server,
        EPISODIC_INJECT_INCLUDE="/srv/code/chosen",
        **on,
    )
    assert code == 0 and CARD_TEXT in out


def test_an_unwritable_log_means_no_experiment_and_memory_is_injected(
    tmp_path: Path, search_server: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "experiment").write_text("a file where the log folder should be")
    code, out, _ = run_hook(
        home, _stdin(_session_in("without"), PROMPT), search_server, EPISODIC_EXPERIMENT_ENABLED="true"
    )
    assert code == 0 and CARD_TEXT in out


def test_against_a_remote_endpoint_the_hook_decides_and_the_log_stays_here(
    tmp_path: Path, search_server: str
) -> None:
    # the AWS deployment: the hook asks a remote endpoint (here through a proxy answering for it)
    home = tmp_path / "home"
    remote = "http://memory.example.invalid/mcp"  # never resolved: the proxy answers
    proxy = search_server.removesuffix("/mcp")
    on = {"EPISODIC_EXPERIMENT_ENABLED": "true", "http_proxy": proxy}
    _, held_out, _ = run_hook(home, _stdin(_session_in("without"), PROMPT), remote, **on)
    _, injected, _ = run_hook(home, _stdin(_session_in("with"), PROMPT), remote, **on)
    assert held_out == "" and CARD_TEXT in injected
    assert [e["arm"] for e in holdout.read_log(home)] == ["without", "with"]
