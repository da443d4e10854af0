"""Write the bundled demo corpus: small, hand-written Claude Code sessions in the real JSONL format.

Run: python scripts/make_demo_corpus.py  (writes shared/episodic/demo/<project>/<session>.jsonl)
The sessions are invented for the demo; each is a problem worked through with tools, with an outcome.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "shared" / "episodic" / "demo"
NS = uuid.UUID("6f1c7a52-0d5e-4d0b-9a59-3b0f2c0de001")

# each step: ("user", text) | ("assistant", text) | ("think", text) | ("bash", cmd, output, exit_code)
# | ("read", path, content) | ("edit", path, old, new)
SESSIONS: list[dict[str, Any]] = [
    {
        "project": "/home/dev/webshop",
        "branch": "fix/ci-lint",
        "start": "2026-01-12T09:14:00Z",
        "steps": [
            (
                "user",
                "npm run check passes locally but the GitHub Actions job fails with Biome lint errors in files I never touched. I work from a git worktree.",
            ),
            (
                "think",
                "CI lints the whole tree; locally the worktree may be ignoring generated files differently.",
            ),
            (
                "bash",
                "npm run check",
                "> webshop@1.0.0 check\n> biome check .\nChecked 212 files in 180ms. No fixes applied.",
                0,
            ),
            (
                "assistant",
                "Locally everything passes. I suspect the Biome version differs between CI and local, let me compare.",
            ),
            (
                "bash",
                "npx biome --version && grep biome package-lock.json | head -3",
                'Version: 1.9.4\n"@biomejs/biome": "1.9.4"',
                0,
            ),
            (
                "assistant",
                "Same version, so that wasn't it. CI runs on a fresh checkout: the generated Prisma client is not ignored there.",
            ),
            ("read", "/home/dev/webshop/.gitignore", "node_modules\ndist\n"),
            (
                "bash",
                "git status --ignored | head",
                "Ignored files:\n  node_modules/\n  src/generated/prisma/",
                0,
            ),
            (
                "assistant",
                "The generated client sits in the worktree's own info/exclude, which CI does not have. Adding it to biome.json ignore list.",
            ),
            ("edit", "/home/dev/webshop/biome.json", '"ignore": []', '"ignore": ["src/generated/**"]'),
            (
                "bash",
                "rm -rf src/generated && npx prisma generate && npm run check",
                "Checked 212 files in 190ms. No fixes applied.",
                0,
            ),
            ("user", "CI is green now, thanks!"),
            (
                "assistant",
                "The root cause was generated Prisma files excluded only by the worktree's local exclude file; CI linted them. Ignoring the generated folder in the Biome config fixed it.",
            ),
        ],
    },
    {
        "project": "/home/dev/payments-api",
        "branch": "main",
        "start": "2026-01-20T14:02:00Z",
        "steps": [
            (
                "user",
                "test_invoice_due_date fails only in CI around midnight, passes every time on my laptop",
            ),
            ("bash", "pytest tests/test_invoices.py -k due_date", "1 passed in 0.31s", 0),
            (
                "assistant",
                "Passes locally. A date test that fails near midnight smells like a timezone difference between the runner and my machine.",
            ),
            (
                "read",
                "/home/dev/payments-api/app/invoices.py",
                "def due_date(issued):\n    return date.today() + timedelta(days=30)\n",
            ),
            ("assistant", "The code mixes date.today() (local time) with UTC timestamps. CI runs in UTC."),
            (
                "bash",
                "TZ=Pacific/Kiritimati pytest tests/test_invoices.py -k due_date",
                "E   AssertionError: assert datetime.date(2026, 2, 20) == datetime.date(2026, 2, 19)\n1 failed in 0.40s",
                1,
            ),
            (
                "assistant",
                "Reproduced by forcing a far-east timezone. I'll compute the date from the issued timestamp in UTC instead of the machine clock.",
            ),
            (
                "edit",
                "/home/dev/payments-api/app/invoices.py",
                "date.today()",
                "issued.astimezone(UTC).date()",
            ),
            (
                "bash",
                "TZ=Pacific/Kiritimati pytest tests/test_invoices.py && pytest",
                "48 passed in 2.10s",
                0,
            ),
            (
                "assistant",
                "Fixed: the due date now derives from the UTC issue timestamp, and the test passes under any TZ.",
            ),
        ],
    },
    {
        "project": "/home/dev/dashboard",
        "branch": "bug/stale-rows",
        "start": "2026-02-03T10:30:00Z",
        "steps": [
            (
                "user",
                "After an optimistic update is rolled back, the React table keeps showing the old rows until I refresh",
            ),
            (
                "assistant",
                "A stale render after rollback usually looks like a reducer mutating state. Let me check the reducer first.",
            ),
            (
                "read",
                "/home/dev/dashboard/src/store/rowsReducer.ts",
                "export function rowsReducer(state, action) { switch (action.type) { case 'rollback': return { ...state, rows: action.previous } } }",
            ),
            (
                "bash",
                "npm test -- rowsReducer",
                "PASS src/store/rowsReducer.test.ts\n  ✓ rollback returns a new array (3 ms)",
                0,
            ),
            (
                "assistant",
                "The reducer does not mutate, so that was a red herring. Next suspect: the row keys.",
            ),
            (
                "read",
                "/home/dev/dashboard/src/components/RowsTable.tsx",
                "const key = indexMap.get(row.id) ?? i",
            ),
            (
                "assistant",
                "Keys come from a cached index map that is not invalidated on rollback, so React reuses the old row components.",
            ),
            (
                "edit",
                "/home/dev/dashboard/src/components/RowsTable.tsx",
                "const key = indexMap.get(row.id) ?? i",
                "const key = row.id",
            ),
            ("bash", "npm test", "Tests: 64 passed, 64 total", 0),
            ("user", "works now, the rows update after rollback"),
            (
                "assistant",
                "Root cause: list keys derived from a cached index map survived the rollback; keying rows by their id fixed the stale render.",
            ),
        ],
    },
    {
        "project": "/home/dev/ingest-worker",
        "branch": "perf/docker",
        "start": "2026-02-10T08:45:00Z",
        "steps": [
            (
                "user",
                "every docker build reinstalls all Python dependencies even when I only change one source file, builds take 6 minutes",
            ),
            (
                "read",
                "/home/dev/ingest-worker/Dockerfile",
                "FROM python:3.12-slim\nCOPY . /app\nRUN pip install -r /app/requirements.txt",
            ),
            (
                "assistant",
                "The COPY of the whole tree happens before pip install, so any source change invalidates the dependency layer.",
            ),
            (
                "edit",
                "/home/dev/ingest-worker/Dockerfile",
                "COPY . /app\nRUN pip install -r /app/requirements.txt",
                "COPY requirements.txt /app/\nRUN pip install -r /app/requirements.txt\nCOPY . /app",
            ),
            (
                "bash",
                "docker build -t worker . && touch src/main.py && docker build -t worker .",
                "Step 3/5 : RUN pip install -r /app/requirements.txt\n ---> Using cache\nSuccessfully built 3f2a",
                0,
            ),
            (
                "assistant",
                "The second build reuses the cached dependency layer; rebuild after a source change now takes seconds.",
            ),
        ],
    },
    {
        "project": "/home/dev/cli-tool",
        "branch": "main",
        "start": "2026-02-16T16:20:00Z",
        "steps": [
            ("user", "go test ./... hangs forever in the sync package, no output, have to kill it"),
            (
                "bash",
                "go test ./internal/sync/ -timeout 20s",
                "panic: test timed out after 20s\nrunning tests:\n\tTestWorkerPoolDrain (20s)",
                1,
            ),
            (
                "assistant",
                "It deadlocks in TestWorkerPoolDrain. I think the channel buffer is too small, let me enlarge it.",
            ),
            ("edit", "/home/dev/cli-tool/internal/sync/pool.go", "make(chan job, 1)", "make(chan job, 100)"),
            ("bash", "go test ./internal/sync/ -timeout 20s", "panic: test timed out after 20s", 1),
            (
                "assistant",
                "Bigger buffer did not help, reverting. The drain waits on the WaitGroup while holding the mutex the workers need.",
            ),
            ("edit", "/home/dev/cli-tool/internal/sync/pool.go", "make(chan job, 100)", "make(chan job, 1)"),
            (
                "edit",
                "/home/dev/cli-tool/internal/sync/pool.go",
                "p.mu.Lock()\n\tp.wg.Wait()",
                "p.wg.Wait()\n\tp.mu.Lock()",
            ),
            (
                "bash",
                "go test -race ./... -timeout 60s",
                "ok  \texample.com/cli-tool/internal/sync\t0.41s\nok  \texample.com/cli-tool/cmd\t0.22s",
                0,
            ),
            (
                "assistant",
                "The hang was a lock-order deadlock: Drain held the mutex while waiting for workers that need it. Waiting before locking fixed it; tests pass with -race.",
            ),
        ],
    },
    {
        "project": "/home/dev/notes-app",
        "branch": "main",
        "start": "2026-02-18T11:00:00Z",
        "steps": [
            (
                "user",
                "what's the difference between useMemo and useCallback, and when should I use each in this codebase?",
            ),
            (
                "read",
                "/home/dev/notes-app/src/hooks/useNotes.ts",
                "export function useNotes() { const filtered = notes.filter(f) }",
            ),
            (
                "assistant",
                "useMemo caches a computed value, useCallback caches a function identity. In useNotes the filtered list is recomputed every render; memoising it only pays off when the list is large or passed to memoised children.",
            ),
        ],
    },
]


def _uid(session: int, n: int) -> str:
    return str(uuid.uuid5(NS, f"{session}-{n}"))


def build_session(index: int, spec: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    session_id = str(uuid.uuid5(NS, f"session-{index}"))
    clock = datetime.fromisoformat(spec["start"].replace("Z", "+00:00")).astimezone(UTC)
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    counter = 0

    def envelope(kind: str) -> dict[str, Any]:
        nonlocal counter, clock, parent
        counter += 1
        clock += timedelta(seconds=20)
        uid = _uid(index, counter)
        entry = {
            "type": kind,
            "uuid": uid,
            "parentUuid": parent,
            "sessionId": session_id,
            "timestamp": clock.isoformat().replace("+00:00", "Z"),
            "version": "2.1.39",
            "cwd": spec["project"],
            "gitBranch": spec["branch"],
            "isSidechain": False,
            "userType": "external",
        }
        parent = uid
        return entry

    def assistant(blocks: list[dict[str, Any]]) -> None:
        entry = envelope("assistant")
        entry["message"] = {
            "id": f"msg_demo{index:02d}{counter:03d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": blocks,
            "stop_reason": "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn",
            "usage": {"input_tokens": 1200, "output_tokens": 180},
        }
        lines.append(entry)

    def tool(name: str, tool_input: dict[str, Any], output: str, is_error: bool, extra: Any) -> None:
        tool_id = f"toolu_demo{index:02d}{counter:04d}"
        assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}])
        entry = envelope("user")
        entry["message"] = {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": is_error}
            ],
        }
        entry["toolUseResult"] = extra
        lines.append(entry)

    for step in spec["steps"]:
        kind = step[0]
        if kind == "user":
            entry = envelope("user")
            entry["message"] = {"role": "user", "content": step[1]}
            lines.append(entry)
        elif kind == "assistant":
            assistant([{"type": "text", "text": step[1]}])
        elif kind == "think":
            assistant([{"type": "thinking", "thinking": step[1], "signature": "demo-signature"}])
        elif kind == "bash":
            _, cmd, out, code = step
            shown = out if code == 0 else f"Exit code {code}\n{out}"
            extra = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            tool(
                "Bash",
                {"command": cmd, "description": "run"},
                shown,
                code != 0,
                extra if code == 0 else shown,
            )
        elif kind == "read":
            _, path, content = step
            numbered = "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(content.splitlines()))
            tool("Read", {"file_path": path}, numbered, False, {"type": "text", "file": {"filePath": path}})
        elif kind == "edit":
            _, path, old, new = step
            extra = {"filePath": path, "oldString": old, "newString": new, "replaceAll": False}
            tool(
                "Edit",
                {"file_path": path, "old_string": old, "new_string": new},
                "The file has been updated.",
                False,
                extra,
            )
    return session_id, lines


def main() -> None:
    for index, spec in enumerate(SESSIONS):
        session_id, lines = build_session(index, spec)
        folder = OUT / spec["project"].strip("/").replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"{session_id}.jsonl").open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(SESSIONS)} sessions under {OUT}")


if __name__ == "__main__":
    main()
