"""`episodic cron install|remove|status`: a nightly `episodic harvest` on the user's own scheduler.

Chosen so that a run missed while the laptop slept still happens (Claude Code deletes transcripts after 30
days, so a quietly skipped harvest is memory lost):
- Linux with systemd: a user timer + service in `~/.config/systemd/user/` (`Persistent=true`: catches up).
- macOS: a launchd agent `~/Library/LaunchAgents/dev.episodic.harvest.plist` (runs after wake if missed).
- Otherwise one user crontab line, tagged with a marker comment (install replaces only that line); cron does
  not catch up. No scheduler at all is reported, not an error.

Every external command goes through an injectable runner, so tests never touch the real scheduler.
Output goes to `<home>/logs/harvest.log`; `episodic harvest` writes `<home>/logs/last-harvest.json`.
"""

from __future__ import annotations

import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from episodic.kernel.errors import ConfigError, InvalidArgumentError

CRON_MARKER = "# episodic-harvest (managed by `episodic cron`)"
LAUNCHD_LABEL = "dev.episodic.harvest"
SYSTEMD_NAME = "episodic-harvest"
HARVEST_LOG = "harvest.log"
SchedulerKind = Literal["crontab", "launchd", "systemd"]


@dataclass(frozen=True)
class Schedule:
    hour: int = 3
    minute: int = 0

    @classmethod
    def parse(cls, text: str) -> Schedule:
        match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text or "")
        if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
            raise InvalidArgumentError(f"--at wants a local time HH:MM (00:00-23:59), got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


@dataclass(frozen=True)
class HarvestJob:
    """What the scheduler runs: the command, the environment it needs, where its output goes."""

    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)


def episodic_executable() -> list[str]:
    """This installation's `episodic` (absolute: schedulers run with a bare PATH)."""
    script = Path(sys.executable).parent / "episodic"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "episodic"]


def harvest_job(
    home: Path,
    *,
    bucket: str,
    tenant: str | None = None,
    profile: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    executable: Sequence[str] | None = None,
) -> HarvestJob:
    argv = [*(executable or episodic_executable()), "harvest", "--bucket", bucket]
    if tenant:
        argv += ["--tenant", tenant]
    if profile:
        argv += ["--profile", profile]
    env = {"EPISODIC_HOME": str(home), **(extra_env or {})}
    return HarvestJob(argv=argv, log_path=home / "logs" / HARVEST_LOG, env=env)


# ---------------------------------------------------------------- generators (pure)


def crontab_line(schedule: Schedule, job: HarvestJob) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(job.env.items()))
    command = " ".join(shlex.quote(a) for a in job.argv)
    log = shlex.quote(str(job.log_path))
    line = f"{schedule.minute} {schedule.hour} * * * {env} {command} >> {log} 2>&1"
    return line.replace("%", "\\%") + f" {CRON_MARKER}"  # cron turns a bare % into a newline


def crontab_with(existing: str, line: str | None) -> str:
    """The crontab text with our line replaced (or removed when `line` is None); other lines untouched."""
    kept = [entry for entry in existing.splitlines() if CRON_MARKER not in entry]
    if line is not None:
        kept.append(line)
    return "".join(f"{entry}\n" for entry in kept)


def launchd_plist(schedule: Schedule, job: HarvestJob) -> bytes:
    data: dict[str, Any] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": list(job.argv),
        "EnvironmentVariables": dict(job.env),
        "StartCalendarInterval": {"Hour": schedule.hour, "Minute": schedule.minute},
        "StandardOutPath": str(job.log_path),
        "StandardErrorPath": str(job.log_path),
        "RunAtLoad": False,
        "ProcessType": "Background",
    }
    return plistlib.dumps(data)


def _systemd_quote(value: str) -> str:
    escaped = value.replace("%", "%%").replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_units(schedule: Schedule, job: HarvestJob) -> dict[str, str]:
    env_lines = "".join(f"Environment={_systemd_quote(f'{k}={v}')}\n" for k, v in sorted(job.env.items()))
    log = str(job.log_path).replace("%", "%%")
    service = (
        "[Unit]\nDescription=episodic: upload new Claude Code transcripts (nightly harvest)\n\n"
        "[Service]\nType=oneshot\n"
        f"{env_lines}"
        f"ExecStart={' '.join(_systemd_quote(a) for a in job.argv)}\n"
        f"StandardOutput=append:{log}\nStandardError=append:{log}\n"
    )
    timer = (
        "[Unit]\nDescription=episodic: nightly harvest\n\n"
        f"[Timer]\nOnCalendar=*-*-* {schedule.hour:02d}:{schedule.minute:02d}:00\nPersistent=true\n"
        f"Unit={SYSTEMD_NAME}.service\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )
    return {f"{SYSTEMD_NAME}.service": service, f"{SYSTEMD_NAME}.timer": timer}


# ---------------------------------------------------------------- installing (through a runner)


@dataclass
class RunResult:
    returncode: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[Sequence[str], str | None], RunResult]


def subprocess_runner(args: Sequence[str], input_text: str | None = None) -> RunResult:
    try:
        done = subprocess.run(
            list(args), input=input_text, capture_output=True, text=True, timeout=60, check=False
        )
    except FileNotFoundError as exc:
        raise ConfigError(f"`{args[0]}` is not installed on this machine") from exc
    return RunResult(done.returncode, done.stdout, done.stderr)


def available(tool: str) -> bool:
    """Whether this machine has `tool`: "systemd" (a running systemd and systemctl) or a command on PATH."""
    if tool == "systemd":
        return shutil.which("systemctl") is not None and Path("/run/systemd/system").is_dir()
    return shutil.which(tool) is not None


def scheduler_kind(
    platform: str, systemd: bool, has: Callable[[str], bool] | None = None
) -> SchedulerKind | None:
    """The scheduler that catches up on missed runs where there is one; crontab last; None: no scheduler."""
    has = has or available
    if systemd:
        return "systemd"
    if platform == "darwin":
        return "launchd"
    if has("systemd"):
        return "systemd"
    return "crontab" if has("crontab") else None


class Scheduler:
    """Installs, removes and reports the nightly job on one scheduler."""

    def __init__(
        self, kind: SchedulerKind, *, user_home: Path, runner: Runner = subprocess_runner, uid: int = 0
    ):
        self.kind = kind
        self.user_home = user_home
        self.runner = runner
        self.uid = uid

    @property
    def plist_path(self) -> Path:
        return self.user_home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"

    @property
    def systemd_dir(self) -> Path:
        return self.user_home / ".config" / "systemd" / "user"

    def _read_crontab(self) -> str:
        result = self.runner(["crontab", "-l"], None)
        if result.returncode != 0:
            if "no crontab" in (result.stderr + result.stdout).lower():
                return ""
            raise ConfigError(f"`crontab -l` failed: {result.stderr.strip() or result.returncode}")
        return result.stdout

    def _write_crontab(self, text: str) -> None:
        result = self.runner(["crontab", "-"], text)
        if result.returncode != 0:
            raise ConfigError(f"`crontab -` failed: {result.stderr.strip() or result.returncode}")

    def _check(self, args: Sequence[str]) -> None:
        result = self.runner(args, None)
        if result.returncode != 0:
            raise ConfigError(f"`{' '.join(args)}` failed: {result.stderr.strip() or result.returncode}")

    def install(self, schedule: Schedule, job: HarvestJob) -> list[str]:
        """Install (or replace) the nightly job; returns what was done, one line each."""
        job.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.kind == "crontab":
            line = crontab_line(schedule, job)
            self._write_crontab(crontab_with(self._read_crontab(), line))
            return [f"crontab: {line}"]
        if self.kind == "launchd":
            self.plist_path.parent.mkdir(parents=True, exist_ok=True)
            self.runner(["launchctl", "bootout", f"gui/{self.uid}/{LAUNCHD_LABEL}"], None)  # absent: fine
            self.plist_path.write_bytes(launchd_plist(schedule, job))
            self._check(["launchctl", "bootstrap", f"gui/{self.uid}", str(self.plist_path)])
            return [f"launchd agent: {self.plist_path} (daily at {schedule})"]
        self.systemd_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in systemd_units(schedule, job).items():
            (self.systemd_dir / name).write_text(text, encoding="utf-8")
            written.append(f"systemd unit: {self.systemd_dir / name}")
        self._check(["systemctl", "--user", "daemon-reload"])
        self._check(["systemctl", "--user", "enable", "--now", f"{SYSTEMD_NAME}.timer"])
        return [*written, f"timer enabled: daily at {schedule}"]

    def remove(self) -> list[str]:
        if self.kind == "crontab":
            existing = self._read_crontab()
            if CRON_MARKER not in existing:
                return ["crontab: no episodic entry"]
            self._write_crontab(crontab_with(existing, None))
            return ["crontab: episodic entry removed"]
        if self.kind == "launchd":
            if not self.plist_path.exists():
                return ["launchd: no episodic agent"]
            self.runner(["launchctl", "bootout", f"gui/{self.uid}/{LAUNCHD_LABEL}"], None)
            self.plist_path.unlink()
            return [f"launchd agent removed: {self.plist_path}"]
        timer = self.systemd_dir / f"{SYSTEMD_NAME}.timer"
        if not timer.exists():
            return ["systemd: no episodic timer"]
        self.runner(["systemctl", "--user", "disable", "--now", f"{SYSTEMD_NAME}.timer"], None)
        for name in (f"{SYSTEMD_NAME}.timer", f"{SYSTEMD_NAME}.service"):
            (self.systemd_dir / name).unlink(missing_ok=True)
        self.runner(["systemctl", "--user", "daemon-reload"], None)
        return ["systemd timer and service removed"]

    def installed(self) -> str | None:
        """The installed schedule as text (the crontab line, the plist time, the OnCalendar) or None."""
        if self.kind == "crontab":
            lines = [e for e in self._read_crontab().splitlines() if CRON_MARKER in e]
            return lines[0] if lines else None
        if self.kind == "launchd":
            if not self.plist_path.exists():
                return None
            data = plistlib.loads(self.plist_path.read_bytes())
            when = data.get("StartCalendarInterval", {})
            return (
                f"launchd {self.plist_path}: daily at {when.get('Hour', 0):02d}:{when.get('Minute', 0):02d}"
            )
        timer = self.systemd_dir / f"{SYSTEMD_NAME}.timer"
        if not timer.exists():
            return None
        calendar = next(
            (ln for ln in timer.read_text(encoding="utf-8").splitlines() if ln.startswith("OnCalendar=")), ""
        )
        return f"systemd {timer}: {calendar}"
