"""The index run's hook into the experiment: measures each session the holdout logged. Its own module so a
memory that only serves reads never imports the measures (and the evidence judge behind them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from episodic.kernel.models import Trajectory


class MeasureRecorder:
    """Measures the sessions the experiment logged, once per content (a grown session again)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.logged: set[str] | None = None  # read on the first session (a memory that serves reads none)
        self.known: dict[str, str] = {}
        self.recorded = 0

    def __call__(self, trajectory: Trajectory) -> None:
        if self.logged is None:
            from episodic.experiment.holdout import read_log

            self.logged = {entry["session_id"] for entry in read_log(self.home)}
            if self.logged:
                from episodic.experiment.measures import load_all

                self.known = {sid: m.source_sha256 for sid, m in load_all(self.home).items()}
        if trajectory.session_id not in self.logged:
            return
        if self.known.get(trajectory.session_id) == trajectory.source_sha256:
            return
        from episodic.experiment.measures import measure, save

        try:
            save(self.home, measure(trajectory))
        except (OSError, ValueError):  # measuring is a side line: it never fails the index run
            return
        self.known[trajectory.session_id] = trajectory.source_sha256
        self.recorded += 1
