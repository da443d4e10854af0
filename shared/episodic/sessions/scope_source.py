"""A transcript source that honours the scope rules, and what it saw (for `index`, `inspect`, `harvest`).

Wraps any `TranscriptSource`: a session the rules keep out of the index loads as a `NotEpisode` whose
reason starts with `SCOPE_REASON_PREFIX`, so indexing skips it and harvest uploads nothing of it. When
given a recorder, every in-scope session loaded is offered to it (the experiment's outcome measures).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from episodic.cards.present import counted
from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.kernel.ports import TranscriptSource
from episodic.kernel.settings import Settings
from episodic.sessions.scope import SKIP_MARKER, ScopeRules

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

Recorder = Callable[[Trajectory], None]


@dataclass
class ProjectScope:
    """One working directory's decisions and how many sessions were seen there."""

    cwd: str
    index: str
    inject: str
    index_included: bool
    inject_included: bool
    sessions: int = 0
    marked: int = 0  # sessions kept out by the skip marker
    project: str = ""  # the repository's name: every worktree of one repository is one project


@dataclass
class ScopedSource(TranscriptSource):
    inner: TranscriptSource
    rules: ScopeRules
    recorder: Recorder | None = None
    projects: dict[str, ProjectScope] = field(default_factory=dict)
    excluded: Counter[str] = field(default_factory=Counter)
    excluded_sessions: dict[str, str] = field(default_factory=dict)  # session id -> why (record_episode)

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        return self.inner.discover(paths)

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        loaded = self.inner.load(source)
        if isinstance(loaded, NotEpisode):
            return loaded
        return self.admit(loaded)

    def admit(self, loaded: Trajectory) -> Trajectory | NotEpisode:
        source = loaded.source
        project = self._project(loaded.cwd, loaded.project)
        project.sessions += 1
        decision = self.rules.decide("index", loaded.cwd, loaded.prompts)
        if not decision.included:
            project.marked += project.index_included
            self.excluded[decision.reason] += 1
            self.excluded_sessions[loaded.session_id] = decision.reason
            return NotEpisode(
                source=source, session_id=loaded.session_id, reason=decision.reason, stats=loaded.stats
            )
        if self.recorder is not None:
            self.recorder(loaded)
        return loaded

    def _project(self, cwd: str, name: str) -> ProjectScope:
        if cwd not in self.projects:
            index = self.rules.decide("index", cwd)
            inject = self.rules.decide("inject", cwd)
            self.projects[cwd] = ProjectScope(
                cwd,
                ScopeRules.why(index),
                ScopeRules.why(inject),
                index.included,
                inject.included,
                project=name,
            )
        return self.projects[cwd]

    def summary(self) -> dict[str, Any]:
        """The rules and, per working directory seen, what they decide (JSON-ready)."""
        return {
            "rules": self.rules.describe(),
            "excluded_sessions": sum(self.excluded.values()),
            "projects": [
                {
                    "cwd": p.cwd,
                    "project": p.project,
                    "sessions": p.sessions,
                    "index": {"included": p.index_included, "reason": p.index},
                    "inject": {"included": p.inject_included, "reason": p.inject},
                    "marked_skip": p.marked,
                }
                for p in sorted(self.projects.values(), key=lambda p: p.cwd)
            ],
        }


def scope_after_index(memory: Memory, tenant_id: str) -> dict[str, Any]:
    """After an index run: forget the cards of sessions the rules now exclude (a rule added after they
    were indexed), and say what the rules decided; empty when the memory's source is not scoped."""
    source = memory.source
    if not isinstance(source, ScopedSource):
        return {}
    forgotten = [sid for sid in sorted(source.excluded_sessions) if memory.forget_session(tenant_id, sid)]
    return {**source.summary(), "forgotten": forgotten}


def rules_from_settings(settings: Settings) -> ScopeRules:
    return ScopeRules.from_values(lambda name: getattr(settings, name, None))


def _unruled_line(projects: list[dict[str, Any]], *, listed: bool) -> str:
    """How many projects no rule keeps out of anything, each repository once (its worktrees and agent
    workspaces are the same project), and other than which ones when some are listed above."""
    folders = [
        p for p in projects if p["index"]["included"] and p["inject"]["included"] and not p["marked_skip"]
    ]
    names = {p.get("project") or p["cwd"] for p in folders}
    where = f" ({counted(len(folders), 'working folder')})" if len(folders) != len(names) else ""
    if listed:
        return f"{counted(len(names), 'project')}{where} besides the folders above: indexed and injected"
    return f"{counted(len(names), 'project')}{where}, no rule applies: indexed and injected"


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The scope summary as text: the rules, then every project a rule excludes from something."""
    rules = {k: v for k, v in summary["rules"].items() if v}
    lines = ["scope rules: " + ("; ".join(f"{k} {', '.join(v)}" for k, v in rules.items()) or "none set")]
    for project in summary["projects"]:
        index, inject = project["index"], project["inject"]
        if index["included"] and inject["included"] and not project["marked_skip"]:
            continue
        marked = f", {project['marked_skip']} marked {SKIP_MARKER}" if project["marked_skip"] else ""
        lines.append(
            f"  {project['cwd'] or '(no working directory)'} ({counted(project['sessions'], 'session')}{marked}): "
            f"index {'yes' if index['included'] else 'no'} ({index['reason']}); "
            f"inject {'yes' if inject['included'] else 'no'} ({inject['reason']})"
        )
    lines.append("  " + _unruled_line(summary["projects"], listed=len(lines) > 1))
    if summary.get("forgotten"):
        forgot = len(summary["forgotten"])
        lines.append(f"  forgot {forgot} session(s) the rules now exclude (card, history, scratch records)")
    return lines
