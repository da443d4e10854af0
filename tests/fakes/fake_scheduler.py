"""A fake crontab/launchctl/systemctl runner for the scheduler tests (never the real ones)."""

from __future__ import annotations

from collections.abc import Sequence

from episodic.harvest.cron import RunResult


class FakeSystem:
    """Records commands; keeps a crontab in memory like `crontab -l` / `crontab -` do."""

    def __init__(self, crontab: str | None = None) -> None:
        self.crontab = crontab
        self.commands: list[list[str]] = []

    def __call__(self, args: Sequence[str], input_text: str | None) -> RunResult:
        self.commands.append(list(args))
        if list(args) == ["crontab", "-l"]:
            if self.crontab is None:
                return RunResult(1, "", "no crontab for dev\n")
            return RunResult(0, self.crontab)
        if list(args) == ["crontab", "-"]:
            self.crontab = input_text
            return RunResult(0)
        return RunResult(0)
