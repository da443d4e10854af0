"""`recall_similar`: the tenant's closest unexpired tool outcomes for a prompt, ranked for the task.

Silence beats noise: results under the similarity threshold are dropped, and a store that errors or
misses the deadline yields nothing (logged and counted; on AWS an embedded metric the stack alarms on).

How a prompt is classified: *repair* when it reads as fixing, debugging or refactoring (a word such as
fix, bug, error, fail, broken, crash, debug, refactor, rename, regression, "doesn't work", a traceback or an
error code), else *greenfield*. Repair ranks `fail` records first (each half by similarity): the question
is "did we already fail at this?". Greenfield keeps similarity order but never lets one outcome take every
slot when the other has a match above the threshold (a mix of what broke and what worked).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import check_tenant
from episodic.kernel.settings import DeployedSettings
from episodic.scratch.models import K_MAX, K_MIN, ScratchHit, ToolOutcome
from episodic.scratch.service import CLOCK_SKEW, ScratchMemory

log = logging.getLogger(__name__)

Task = Literal["repair", "greenfield"]
POOL_FACTOR = 4  # candidates fetched per slot, so that fail-first can reach past the closest oks
MAX_QUERY_CHARS = 1500
METRIC_NAMESPACE = "Episodic"
DEGRADED_METRIC = "ScratchRecallDegraded"

_REPAIR_RE = re.compile(
    r"\b(?:fix\w*|bug\w*|debug\w*|error\w*|fail\w*|broke\w*|break(?:s|ing)?|crash\w*|refactor\w*|renam\w*"
    r"|regress\w*|flaky|hang(?:s|ing)?|exception|traceback|stack\s*trace|panic\w*|segfault|timeout|timed out"
    r"|not working|doesn'?t work|does not work|won'?t (?:build|compile|start|run)|can(?:no|')t (?:find|import)"
    r"|undefined|cannot|repair\w*|patch\w*|migrat\w*|revert\w*|wrong|issue)\b"
    r"|\b[A-Z]{2,}\d{3,}\b|\b(?:TS|E)\d{3,}\b",
    re.I,
)

degraded: Counter[str] = (
    Counter()
)  # why recall returned nothing early: "timeout", "error:<Type>" (tests, doctor)
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="scratch-recall")
_pool_lock = threading.Lock()


def classify_task(prompt: str) -> Task:
    return "repair" if _REPAIR_RE.search(prompt) else "greenfield"


def rank(hits: list[ScratchHit], task: Task, k: int) -> list[ScratchHit]:
    """Fail-first for repair; for greenfield similarity order with both outcomes represented when both match."""
    by_similarity = sorted(hits, key=lambda h: -h.similarity)
    fails = [h for h in by_similarity if h.record.outcome is ToolOutcome.FAIL]
    oks = [h for h in by_similarity if h.record.outcome is ToolOutcome.OK]
    if task == "repair":
        return [*fails, *oks][:k]
    chosen = by_similarity[:k]
    for minority in (oks, fails):
        if minority and not any(h in chosen for h in minority) and k > 1:
            chosen = [*chosen[: k - 1], minority[0]]
    return sorted(chosen, key=lambda h: -h.similarity)


@dataclass
class Recall:
    hits: list[ScratchHit] = field(default_factory=list)
    task: Task = "greenfield"
    degraded: str = ""  # why nothing came back early ("timeout", "error: …"), else ""


def check_k(k: int | None, default: int) -> int:
    value = default if k is None else int(k)
    if not K_MIN <= value <= K_MAX:
        raise InvalidArgumentError(f"k must be between {K_MIN} and {K_MAX}, got {value}")
    return value


def degraded_metric_line(now: datetime | None = None) -> str:
    """One CloudWatch embedded-metric-format record: printed raw by a Lambda, it becomes the metric the
    stack alarms on (a log handler's prefix would stop CloudWatch from reading it)."""
    stamp = int((now or datetime.now(UTC)).timestamp() * 1000)
    metrics = [{"Namespace": METRIC_NAMESPACE, "Dimensions": [[]], "Metrics": [{"Name": DEGRADED_METRIC}]}]
    return json.dumps({"_aws": {"Timestamp": stamp, "CloudWatchMetrics": metrics}, DEGRADED_METRIC: 1})


def _count_degraded(scratch: ScratchMemory, reason: str, tenant: str) -> None:
    degraded[reason.split(":", 1)[0]] += 1
    log.warning("scratch recall degraded for tenant %s: %s", tenant, reason)
    if isinstance(scratch.settings, DeployedSettings):  # only in a Lambda: locally stdout may be MCP stdio
        print(degraded_metric_line(), flush=True)


def recall_similar(
    scratch: ScratchMemory,
    tenant_id: str,
    query: str,
    k: int | None = None,
    *,
    now: datetime | None = None,
    deadline_seconds: float | None = None,
) -> Recall:
    """The tenant's k (3-5) closest unexpired outcomes above the threshold, ranked for the task; never raises
    for a store failure or a missed deadline (returns nothing, logged and counted)."""
    tenant = check_tenant(tenant_id)
    k = check_k(k, scratch.settings.scratch_k)
    text = query.strip()[:MAX_QUERY_CHARS]
    if not text:
        raise InvalidArgumentError("query must not be empty")
    task = classify_task(text)
    now = now or scratch.clock()
    not_before = now - timedelta(days=scratch.settings.scratch_ttl_days)
    wait = scratch.settings.scratch_deadline_seconds if deadline_seconds is None else deadline_seconds

    def nearest() -> list[ScratchHit]:
        vector = scratch.embedder.embed([text])[0]
        return scratch.store.query(tenant, vector, k * POOL_FACTOR, not_before, scratch.manifest)

    with _pool_lock:
        future = _pool.submit(nearest)
    try:
        hits = future.result(timeout=wait)
    except FutureTimeout:
        future.cancel()
        _count_degraded(scratch, f"timeout: no answer within {wait:.2f} s", tenant)
        return Recall(task=task, degraded="timeout")
    except Exception as exc:  # the agent loop is never blocked by the scratch store
        reason = f"error: {type(exc).__name__}: {str(exc)[:200]}"
        _count_degraded(scratch, reason, tenant)
        return Recall(task=task, degraded=reason)
    threshold = scratch.min_similarity
    not_after = (
        now + CLOCK_SKEW
    )  # dated in the future by an older version: never handed out (the sweep deletes it)
    kept = [h for h in hits if h.similarity >= threshold and not_before <= h.record.created_at <= not_after]
    return Recall(hits=rank(kept, task, k), task=task)
