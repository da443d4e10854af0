"""Search latency of the SQLite index at 10,000 offline cards x 4 renderings (3 voting).

Builds an index in a temp dir from random but realistic cards (vectors from the fast HashingEmbedder),
then reports p50/p95 of
  - store.query alone (hybrid: blended cosine of the voting renderings + tenant BM25, score fusion), cold
    (first query: builds the matrix and the keyword postings) and warm;
  - the serving path with the local model: MiniLM query embedding + store.query. (The index holds
    hashing vectors, so the store is queried with the hashing vector of the same text: the latency is
    the same as for a MiniLM-built index of this size, and embedding parity stays intact.)
  - with --judge, that path plus the local judge (episodic.judge) over the first stage's best `judge_depth`,
    as search_traces runs it: the cards are then written as an LLM's (the judge reads those), every query
    differs from the last so the judge's cache of read pairs never answers, and its deadline is off so the
    figure is the judge's whole cost.

    python scripts/bench_search.py [--cards 10000] [--queries 200] [--no-minilm] [--judge] [--other-tenant 1000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.models import (
    CARD_RENDERINGS,
    RENDERINGS,
    Card,
    CardRecord,
    DistillerInfo,
    IndexManifest,
    Outcome,
    SearchFilters,
)
from episodic.kernel.ports import StoredVector
from episodic.store.render import render
from episodic.store.sqlite import SQLiteStore

SUBJECTS = [
    "websocket client",
    "postgres connection pool",
    "docker image build",
    "pytest fixture",
    "terraform plan",
    "react component",
    "lambda cold start",
    "s3 upload",
    "oauth token refresh",
    "kafka consumer",
    "redis cache",
    "graphql resolver",
    "cron job",
    "ci pipeline",
    "npm install",
    "git rebase",
    "kubernetes pod",
    "nginx proxy",
    "celery worker",
    "django migration",
    "rust borrow checker",
    "go module",
    "typescript build",
    "webpack bundle",
    "sqlite lock",
    "json parser",
    "csv import",
    "ssh tunnel",
    "tls certificate",
    "dns lookup",
    "http client",
    "grpc stream",
    "elasticsearch query",
    "airflow dag",
]
SYMPTOMS = [
    "times out after a few minutes",
    "fails intermittently in CI",
    "returns stale data",
    "leaks memory under load",
    "crashes on startup",
    "is very slow",
    "drops messages",
    "hangs without an error",
    "reports a permission denied error",
    "breaks after the upgrade",
    "works locally but not in production",
    "produces duplicate rows",
    "ignores the configuration",
    "retries forever",
    "runs out of file descriptors",
    "deadlocks on shutdown",
]
CAUSES = [
    "an idle timeout shorter than the keepalive",
    "a missing index",
    "a race between two writers",
    "a cached credential that expired",
    "a default region mismatch",
    "an unpinned dependency",
    "a wrong environment variable",
    "an off-by-one in pagination",
    "clock skew between hosts",
    "a connection never returned to the pool",
    "a retry without backoff",
    "a blocking call on the event loop",
]
ACTIONS = [
    "reproduced it with a minimal case",
    "read the service logs",
    "added tracing around the call",
    "bisected the commits",
    "compared the working and failing configurations",
    "wrote a failing test",
    "checked the metrics dashboard",
    "raised the log level",
    "inspected the network traffic",
    "pinned the dependency",
    "added a retry with backoff",
    "moved the call off the event loop",
    "increased the pool size",
    "rotated the credential",
]
TAGS = [
    "python",
    "typescript",
    "go",
    "rust",
    "aws",
    "docker",
    "kubernetes",
    "postgres",
    "redis",
    "ci",
    "testing",
    "performance",
    "networking",
]
OUTCOMES = [Outcome.VERIFIED] * 6 + [Outcome.UNVERIFIED, Outcome.FAILED, Outcome.INFORMATIONAL]


def make_card(rng: random.Random) -> Card:
    subject, symptom, cause = rng.choice(SUBJECTS), rng.choice(SYMPTOMS), rng.choice(CAUSES)
    return Card(
        problem=f"The {subject} {symptom}",
        steps=[rng.choice(ACTIONS) for _ in range(rng.randint(3, 7))],
        key_decisions=[f"chose to fix {cause} rather than work around it"],
        insight=f"The root cause was {cause}",
        dead_ends=[f"suspected {rng.choice(CAUSES)} but it was not that"],
        misleading_intuitions=[f"the {rng.choice(SUBJECTS)} looked guilty"],
        critical_checks=[rng.choice(ACTIONS)],
        outcome=rng.choice(OUTCOMES),
        tags=rng.sample(TAGS, 3),
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(name: str, millis: list[float]) -> None:
    print(
        f"{name:<42} p50 {percentile(millis, 0.5):7.2f} ms   p95 {percentile(millis, 0.95):7.2f} ms   "
        f"mean {statistics.mean(millis):7.2f} ms   (n={len(millis)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM serving-path measurement")
    parser.add_argument(
        "--other-tenant",
        type=int,
        default=0,
        help="also index this many cards for a second tenant (the keyword half then ranks on the "
        "searched tenant's own statistics)",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="also time the serving path with the local judge (its model installed by scripts/install)",
    )
    args = parser.parse_args()
    kind = "claude-code" if args.judge else "heuristic"  # the judge reads LLM-written cards only
    rng = random.Random(7)
    embedder = HashingEmbedder(384)
    manifest = IndexManifest(
        embedder_id=embedder.id, dimension=embedder.dimension, renderings=list(RENDERINGS)
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "index.sqlite3")
        started = time.perf_counter()
        base = datetime(2025, 1, 1, tzinfo=UTC)
        for i in range(args.cards + args.other_tenant):
            card = make_card(rng)
            record = CardRecord(
                card=card,
                tenant_id="local" if i < args.cards else "other",
                session_id=f"session-{i:06d}",
                project=rng.choice(["api", "web", "infra", "data"]),
                started_at=base + timedelta(hours=i),
                source_sha256=f"{i:064x}",
                distiller=DistillerInfo(kind=kind),
            )
            # an offline card, as the default indexes it: its renderings and the session's opening words
            texts = [render(card, r) for r in CARD_RENDERINGS] + [
                f"User: {card.problem}? {rng.choice(SYMPTOMS)}"
            ]
            vectors = embedder.embed(texts)
            store.upsert(
                record,
                [StoredVector(r, t, v) for r, t, v in zip(RENDERINGS, texts, vectors, strict=True)],
                manifest,
            )
        build = time.perf_counter() - started
        size_mb = (Path(tmp) / "index.sqlite3").stat().st_size / 1e6
        print(
            f"built {args.cards} cards x {len(RENDERINGS)} renderings in {build:.1f} s ({size_mb:.1f} MB + WAL)"
        )

        queries = [f"{rng.choice(SUBJECTS)} {rng.choice(SYMPTOMS)}" for _ in range(args.queries)]
        vectors = embedder.embed(queries)
        filters = SearchFilters()

        started = time.perf_counter()
        store.query(
            "local", vectors[0], queries[0], args.k, filters, manifest, embedder.default_min_similarity
        )
        print(
            f"cold first query (builds the in-memory matrix): {(time.perf_counter() - started) * 1000:.1f} ms"
        )

        millis = []
        for text, vector in zip(queries, vectors, strict=True):
            t0 = time.perf_counter()
            store.query("local", vector, text, args.k, filters, manifest, embedder.default_min_similarity)
            millis.append((time.perf_counter() - t0) * 1000)
        report("store.query (verified only)", millis)
        every = SearchFilters(include_unverified=True, tags=["python", "aws"])
        millis = []
        for text, vector in zip(queries, vectors, strict=True):
            t0 = time.perf_counter()
            store.query("local", vector, text, args.k, every, manifest, embedder.default_min_similarity)
            millis.append((time.perf_counter() - t0) * 1000)
        report("store.query (all outcomes, tag filter)", millis)

        if not args.no_minilm:
            from episodic.embed.minilm import MiniLMEmbedder

            model = MiniLMEmbedder()
            model.load()
            model.embed(["warm up"])
            embed_ms, total_ms = [], []
            for text, vector in zip(queries, vectors, strict=True):
                t0 = time.perf_counter()
                model.embed([text])
                t1 = time.perf_counter()
                store.query("local", vector, text, args.k, filters, manifest, embedder.default_min_similarity)
                t2 = time.perf_counter()
                embed_ms.append((t1 - t0) * 1000)
                total_ms.append((t2 - t0) * 1000)
            report("MiniLM query embedding alone", embed_ms)
            report("MiniLM embedding + store.query", total_ms)
            if args.judge:
                judged_path(store, model, queries, vectors, manifest, embedder.default_min_similarity, args.k)
        store.close()


def judged_path(store, model, queries, vectors, manifest, floor, k) -> None:  # type: ignore[no-untyped-def]
    """MiniLM embedding + store.query + the judge over the best `judge_depth`, as search_traces runs them."""
    import os

    from episodic.assembly.adapters import local_judge
    from episodic.core.search import second_stage
    from episodic.kernel.settings import Settings

    settings = Settings()
    judge = local_judge(settings)
    if judge is None:
        raise SystemExit("the judge's model is not installed: run scripts/install first")
    judge.warm()
    filters = SearchFilters()
    depth = max(k, judge.depth)
    judge_ms, total_ms, judged = [], [], 0
    for i, (text, vector) in enumerate(zip(queries, vectors, strict=True)):
        asked = f"{text} (query {i})"  # never a pair the judge's cache has read
        t0 = time.perf_counter()
        model.embed([asked])
        hits = store.query("local", vector, asked, depth, filters, manifest, floor)
        t1 = time.perf_counter()
        ranked = second_stage(judge, asked, hits, 0.0) if len(hits) > 1 else hits
        t2 = time.perf_counter()
        judged += any(h.judge is not None for h in ranked)
        judge_ms.append((t2 - t1) * 1000)
        total_ms.append((t2 - t0) * 1000)
    print(
        f"judge: depth {judge.depth}, {judge.max_tokens} tokens, judged {judged}/{len(queries)} queries, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    report("the judge alone", judge_ms)
    report("MiniLM + store.query + the judge", total_ms)


if __name__ == "__main__":
    main()
