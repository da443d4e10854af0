"""Progress of an evaluation run: stages with a known total (parse, distill, embed, rank)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any


class Progress:
    """Silent progress (the default for library callers and tests)."""

    def start(self, label: str, total: int) -> None:
        """Begin a stage of `total` steps (ends the previous stage)."""

    def advance(self, steps: int = 1) -> None:
        """Count steps of the current stage."""

    def note(self, message: str) -> None:
        """A one-line remark (e.g. a warning about a query)."""


class RichProgress(Progress, AbstractContextManager["RichProgress"]):
    """A rich progress bar on stderr, one line per stage; notes printed above the bar."""

    def __init__(self, enabled: bool = True) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self.console = Console(stderr=True)
        self._bar = Bar(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
        )
        self._task: Any = None

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.stop()

    def start(self, label: str, total: int) -> None:
        if self._task is not None:
            task = self._bar.tasks[-1]
            self._bar.update(self._task, completed=task.total)
        self._task = self._bar.add_task(label, total=max(total, 0))

    def advance(self, steps: int = 1) -> None:
        if self._task is not None:
            self._bar.advance(self._task, steps)

    def note(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False)
