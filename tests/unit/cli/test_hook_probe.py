"""What `doctor` and `setup` make of the line the prompt hook logged: each outcome its status and fix."""

from __future__ import annotations

import pytest
from episodic.cli.hook_probe import as_found, classify


@pytest.mark.parametrize(
    ("logged", "status", "fix_says"),
    [
        ("ok: injected 1 episode(s) and 0 weak pointer(s)", "ok", ""),
        ("ok: no confident or weak match among verified episodes", "warn", "found nothing"),
        (
            "skip: missing config (no token: set EPISODIC_TOKEN or `token` in the config file)",
            "fail",
            "setup",
        ),
        ("fail: server answered HTTP 401", "fail", "refused the hook's token"),
        (
            "fail: another program answers at 127.0.0.1:8765 (HTTP 501), not this home's server",
            "fail",
            "port",
        ),
        ("fail: server timed out after 1.40 s", "fail", "a timeout, not a miss"),
        ("fail: timed out (budget exceeded)", "fail", "a timeout, not a miss"),
        ("fail: no server answered; started `episodic serve` in the background (pid 7)", "warn", "again"),
        (
            "fail: config file /h/config.toml is not valid TOML: Invalid value (at line 2, column 8)",
            "fail",
            "line",
        ),
        ("skip: excluded by inject_exclude ~/projects/secret", "warn", "scope"),
    ],
)
def test_each_logged_outcome_has_its_status_and_fix(logged: str, status: str, fix_says: str) -> None:
    probe = classify(logged)
    assert (probe.status, probe.detail) == (status, logged)
    assert fix_says in probe.fix


FOREIGN = (
    "another program answers at 127.0.0.1:8765 (HTTP 501, Server: SimpleHTTP/0.6), not this home's server"
)
MOVED = "moved this home's server to port 40001 (saved in /h/config.toml) and started it"


@pytest.mark.parametrize(
    "logged",
    [
        f"ok: injected 1 episode(s) and 2 weak pointer(s); {FOREIGN}; {MOVED}",  # the moved server was quick
        f"fail: {FOREIGN}; {MOVED}",  # it was not up within the budget
    ],
)
def test_doctor_reports_another_program_on_the_port_as_a_fail_however_fast_the_moved_server_was(
    logged: str,
) -> None:
    probe = as_found(classify(logged))
    assert probe.status == "fail" and probe.detail.startswith(f"fail: {FOREIGN}; {MOVED}")
    assert "port" in probe.fix


def test_an_ok_line_without_another_program_stays_ok() -> None:
    logged = (
        "ok: injected 1 episode(s) and 0 weak pointer(s); started `episodic serve` in the background (pid 7)"
    )
    assert as_found(classify(logged)) == classify(logged)
