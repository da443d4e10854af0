"""History records for two tenants (and a memory holding them) for the history tools' tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from episodic.history.models import HistoryRecord, Turn
from episodic.history.service import kept_history
from episodic.history.sqlite_store import SQLiteHistoryStore
from episodic.kernel.memory import Memory

from kits.mcp_testkit import ALPHA, BETA, build_memory, populate, settings_for


def record(tenant: str, session_id: str, day: str, prompts: list[str], **extra: object) -> HistoryRecord:
    started = datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC)
    return HistoryRecord(
        tenant_id=tenant,
        session_id=session_id,
        source_sha256=str(extra.pop("sha", "a" * 64)),
        project=str(extra.pop("project", "shop")),
        cwd=str(extra.pop("cwd", "/home/dev/shop")),
        started_at=started,
        ended_at=started.replace(hour=10),
        turns=[Turn(index=i, prompt=p, reply=f"reply {i} to {session_id}") for i, p in enumerate(prompts)],
        **extra,  # type: ignore[arg-type]
    )


RECORDS = [
    record(
        ALPHA,
        "alpha-pytest-fixture",
        "2026-01-12",
        [
            "pytest cannot find the fixture after moving conftest into a worktree",
            "let's go with keeping conftest at the rootdir instead of duplicating it",
        ],
        git_branch="alex/ent-297-fix-conftest",
        closing_summary="Moved conftest back; the fixture resolves.",
    ),
    record(
        ALPHA,
        "alpha-docker-cache",
        "2026-02-03",
        [
            "docker build fails writing the npm cache, see https://github.com/acme/shop/issues/41",
        ],
    ),
    record(
        ALPHA,
        "alpha-postgres-pool",
        "2026-03-20",
        [
            "postgres refuses connections under load; we decided to use one shared pool for the worktree jobs",
        ],
        project="billing",
    ),
    record(
        BETA,
        "beta-pytest-fixture",
        "2026-01-15",
        [
            "beta secret: pytest fixture missing after the conftest moved, worktree layout",
        ],
        project="beta-secret-project",
    ),
    record(BETA, "beta-postgres-pool", "2026-03-21", ["beta private postgres pool worktree decision"]),
]


def history_memory(home: Path) -> Memory:
    """The mcp_testkit's two-tenant card index plus a SQLite history store holding RECORDS."""
    settings = settings_for(home)
    memory = build_memory(settings)
    populate(memory)
    memory.parts["history"] = SQLiteHistoryStore(home / "history.sqlite3")
    for r in RECORDS:
        kept_history(memory).put(r)
    return memory
