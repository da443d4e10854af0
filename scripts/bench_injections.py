"""Benchmark: what recording adds to the hook's answer on the server. A store filled to the retention cap
(`injections_keep_per_tenant`, one tenant), then per hook call: the session's earlier gifts read
(`given`) and the new records written (`add`), as `episodic.core.injected.give` does.

    python scripts/bench_injections.py [--records 50000] [--calls 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from episodic.injections.sqlite_store import SQLiteInjectionStore
from episodic.kernel.injection_port import InjectionRecord, prompt_hash


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000, help="Records in the store before timing.")
    parser.add_argument("--calls", type=int, default=300, help="Hook calls timed.")
    args = parser.parse_args()
    start = datetime.now(UTC) - timedelta(days=80)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteInjectionStore(Path(tmp) / "injections.sqlite3")
        batch = [
            InjectionRecord(
                tenant_id="local",
                session_id=f"s{n // 3}",
                card_id=f"c{n % 997}",
                tier="pointer" if n % 3 else "card",
                source="prompt_hook",
                prompt_sha256=prompt_hash(str(n)),
                chars=400,
                at=start + timedelta(seconds=n * 60),
            )
            for n in range(args.records)
        ]
        store.add("local", batch)
        times = []
        for call in range(args.calls):
            session = f"new-{call // 5}"  # five prompts a session
            began = time.perf_counter()
            store.given("local", session)
            store.add(
                "local",
                [
                    InjectionRecord(
                        tenant_id="local",
                        session_id=session,
                        card_id=f"c{call % 50}",
                        tier="card",
                        source="prompt_hook",
                        prompt_sha256=prompt_hash(str(call)),
                        chars=600,
                        at=datetime.now(UTC),
                    )
                ],
            )
            times.append((time.perf_counter() - began) * 1000)
        times.sort()
        print(
            f"{args.records} records: given + add per hook call, median {statistics.median(times):.2f} ms, "
            f"p95 {times[int(len(times) * 0.95) - 1]:.2f} ms ({args.calls} calls)"
        )


if __name__ == "__main__":
    main()
