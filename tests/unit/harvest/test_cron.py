"""Scheduler files generated into a temporary folder, with a fake crontab/launchctl/systemctl runner."""

from __future__ import annotations

import plistlib
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from episodic.harvest.cron import (
    CRON_MARKER,
    RunResult,
    Schedule,
    Scheduler,
    crontab_line,
    crontab_with,
    harvest_job,
    launchd_plist,
    scheduler_kind,
    systemd_units,
)
from episodic.kernel.errors import ConfigError, InvalidArgumentError
from fakes.fake_scheduler import FakeSystem

EXE = ["/opt/my tools/bin/episodic"]


@pytest.fixture()
def job(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "episodic home"
    return harvest_job(
        home,
        bucket="my-bucket",
        tenant="alice",
        profile="work",
        executable=EXE,
        extra_env={"CLAUDE_CONFIG_DIR": "/c/claude"},
    )


def test_schedule_parsing() -> None:
    assert Schedule.parse("03:00") == Schedule(3, 0)
    assert str(Schedule.parse(" 7:05 ")) == "07:05"
    for bad in ("24:00", "3", "03:60", "", "ab:cd"):
        with pytest.raises(InvalidArgumentError):
            Schedule.parse(bad)


def test_crontab_line_runs_harvest_nightly_with_log_and_marker(job) -> None:  # type: ignore[no-untyped-def]
    line = crontab_line(Schedule(3, 0), job)
    assert line.startswith("0 3 * * * ")
    assert line.endswith(CRON_MARKER)
    command = line[len("0 3 * * * ") : -len(CRON_MARKER)]
    words = shlex.split(command)
    assert words[:2] == ["CLAUDE_CONFIG_DIR=/c/claude", f"EPISODIC_HOME={job.env['EPISODIC_HOME']}"]
    assert words[2:] == [
        *EXE,
        "harvest",
        "--bucket",
        "my-bucket",
        "--tenant",
        "alice",
        "--profile",
        "work",
        ">>",
        str(job.log_path),
        "2>&1",
    ]
    assert job.log_path.name == "harvest.log" and job.log_path.parent.name == "logs"


def test_percent_signs_are_escaped_for_cron(tmp_path: Path) -> None:
    job = harvest_job(tmp_path / "100%", bucket="b", executable=EXE)
    line = crontab_line(Schedule(1, 30), job)
    assert "100\\%" in line and "100%" not in line.replace("\\%", "")


def test_install_is_idempotent_and_keeps_other_lines(job) -> None:  # type: ignore[no-untyped-def]
    system = FakeSystem("MAILTO=me\n15 * * * * backup.sh\n")
    scheduler = Scheduler("crontab", user_home=Path("/nonexistent"), runner=system)
    scheduler.install(Schedule(3, 0), job)
    scheduler.install(Schedule(4, 30), job)
    assert system.crontab is not None
    lines = system.crontab.splitlines()
    assert lines[:2] == ["MAILTO=me", "15 * * * * backup.sh"]
    ours = [line for line in lines if CRON_MARKER in line]
    assert len(ours) == 1 and ours[0].startswith("30 4 * * * ")
    assert scheduler.installed() == ours[0]
    assert job.log_path.parent.is_dir()  # cron's redirection needs the folder

    scheduler.remove()
    assert system.crontab == "MAILTO=me\n15 * * * * backup.sh\n"
    assert scheduler.installed() is None
    assert scheduler.remove() == ["crontab: no episodic entry"]


def test_install_into_an_empty_crontab(job) -> None:  # type: ignore[no-untyped-def]
    system = FakeSystem(None)
    Scheduler("crontab", user_home=Path("/nonexistent"), runner=system).install(Schedule(), job)
    assert system.crontab == crontab_line(Schedule(), job) + "\n"


def test_crontab_errors_are_clear(job) -> None:  # type: ignore[no-untyped-def]
    def broken(args: Sequence[str], input_text: str | None) -> RunResult:
        return RunResult(1, "", "crontab: permission denied")

    with pytest.raises(ConfigError, match="permission denied"):
        Scheduler("crontab", user_home=Path("/x"), runner=broken).install(Schedule(), job)


def test_crontab_with_removes_only_marked_lines() -> None:
    text = f"a\n0 3 * * * old {CRON_MARKER}\nb\n"
    assert crontab_with(text, None) == "a\nb\n"
    assert crontab_with("", "new") == "new\n"


def test_launchd_agent(tmp_path: Path, job) -> None:  # type: ignore[no-untyped-def]
    data = plistlib.loads(launchd_plist(Schedule(3, 0), job))
    assert data["Label"] == "dev.episodic.harvest"
    assert data["ProgramArguments"] == [
        *EXE,
        "harvest",
        "--bucket",
        "my-bucket",
        "--tenant",
        "alice",
        "--profile",
        "work",
    ]
    assert data["StartCalendarInterval"] == {"Hour": 3, "Minute": 0}
    assert data["StandardOutPath"] == data["StandardErrorPath"] == str(job.log_path)
    assert data["EnvironmentVariables"]["EPISODIC_HOME"] == job.env["EPISODIC_HOME"]

    system = FakeSystem()
    scheduler = Scheduler("launchd", user_home=tmp_path, runner=system, uid=501)
    scheduler.install(Schedule(2, 15), job)
    plist = tmp_path / "Library" / "LaunchAgents" / "dev.episodic.harvest.plist"
    assert plistlib.loads(plist.read_bytes())["StartCalendarInterval"] == {"Hour": 2, "Minute": 15}
    assert ["launchctl", "bootstrap", "gui/501", str(plist)] in system.commands
    assert scheduler.installed() == f"launchd {plist}: daily at 02:15"
    scheduler.remove()
    assert not plist.exists() and ["launchctl", "bootout", "gui/501/dev.episodic.harvest"] in system.commands


def test_systemd_user_timer(tmp_path: Path, job) -> None:  # type: ignore[no-untyped-def]
    units = systemd_units(Schedule(3, 0), job)
    service, timer = units["episodic-harvest.service"], units["episodic-harvest.timer"]
    assert "Type=oneshot" in service
    assert (
        'ExecStart="/opt/my tools/bin/episodic" harvest --bucket my-bucket --tenant alice --profile work'
        in service
    )
    assert f'Environment="EPISODIC_HOME={job.env["EPISODIC_HOME"]}"' in service
    assert f"StandardOutput=append:{job.log_path}" in service
    assert (
        "OnCalendar=*-*-* 03:00:00" in timer
        and "Persistent=true" in timer
        and "WantedBy=timers.target" in timer
    )

    system = FakeSystem()
    scheduler = Scheduler("systemd", user_home=tmp_path, runner=system)
    scheduler.install(Schedule(3, 0), job)
    folder = tmp_path / ".config" / "systemd" / "user"
    assert sorted(p.name for p in folder.iterdir()) == ["episodic-harvest.service", "episodic-harvest.timer"]
    assert system.commands == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "episodic-harvest.timer"],
    ]
    assert scheduler.installed() == f"systemd {folder / 'episodic-harvest.timer'}: OnCalendar=*-*-* 03:00:00"
    scheduler.remove()
    assert list(folder.iterdir()) == []
    assert ["systemctl", "--user", "disable", "--now", "episodic-harvest.timer"] in system.commands


def test_systemd_escapes_percent_and_dollar(tmp_path: Path) -> None:
    job = harvest_job(tmp_path, bucket="b$x%y", executable=EXE)
    service = systemd_units(Schedule(), job)["episodic-harvest.service"]
    assert "b$$x%%y" in service


def test_scheduler_choice_prefers_the_ones_that_catch_up() -> None:
    def has(*tools: str) -> Callable[[str], bool]:
        return lambda tool: tool in tools

    assert scheduler_kind("linux", False, has("systemd", "crontab")) == "systemd"  # Persistent=true
    assert scheduler_kind("linux", False, has("crontab")) == "crontab"  # the fallback
    assert scheduler_kind("linux", False, has()) is None  # reported by the CLI, not an error
    assert scheduler_kind("darwin", False, has("crontab")) == "launchd"
    assert scheduler_kind("linux", True, has()) == "systemd"
