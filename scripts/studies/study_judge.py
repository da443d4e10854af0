"""Study: the local judge (episodic.judge) over the first stage's best candidates, per card set
and fold: recall@1/@3 and MRR of every card (`hybrid`) and of the verified ones (the hook's pool), and what
the hook would inject (a full card for the best verified hit when it is strong) for the dev queries and the
in-domain negatives. The judge's logits are computed once per (prompt, card text) and kept in --cache; every
weight and bar is then chosen on one fold and read on the other.

    python scripts/studies/study_judge.py ../shared/transcripts ../shared/eval --cache /tmp/judge-study.pkl
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from study_relevance_judge import dev_card_sets, set_memory

DEPTH = 8
TOKENS = 160
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def collect(transcripts: Path, eval_dir: Path) -> dict[str, Any]:
    from episodic.core.search import search_traces
    from episodic.evaluation.cardsets import fold_of
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries
    from episodic.judge.model import cross_encoder, default_model_dir
    from episodic.judge.reranker import HEURISTIC, card_text, offline_text
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    encoder = cross_encoder(default_model_dir())
    prompts = [
        (q.id, fold_of(q.session_id), q.session_id, q.query)
        for q in read_queries(eval_dir / "dev-queries.jsonl")
    ]
    prompts += [
        (n.id, fold_of(n.id), None, n.query) for n in read_negatives(eval_dir / "dev-negatives.jsonl")
    ]
    data: dict[str, Any] = {"floor": embedder.default_min_similarity, "sets": {}, "latency": []}
    with tempfile.TemporaryDirectory() as workdir:
        for card_set in sets:
            memory = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            rows = []
            for n, (pid, fold, target, text) in enumerate(prompts):
                row: dict[str, Any] = {"id": pid, "fold": fold, "target": target}
                for pool, include in (("all", True), ("verified", False)):
                    hits = search_traces(
                        memory,
                        LOCAL_TENANT,
                        text,
                        k=memory.settings.max_k,
                        filters=SearchFilters(include_unverified=include),
                    )
                    ids = [h.record.session_id for h in hits]
                    row[pool + "_rank"] = ids.index(target) + 1 if target in ids else None
                    top = []
                    for h in hits[:DEPTH]:
                        offline = h.record.distiller.kind == HEURISTIC
                        # an offline card by its opening words only: read as card text it lost before
                        texts = (
                            {"opening": offline_text(h.record, "opening")}
                            if offline
                            else {"card": card_text(h.record)}
                        )
                        top.append(
                            {
                                "sid": h.record.session_id,
                                "score": h.score,
                                "sim": h.similarity,
                                "pool": h.pool_size,
                                "offline": offline,
                                "texts": texts,
                            }
                        )
                    row[pool] = top
                needed = {}
                for pool in ("all", "verified"):
                    for h in row[pool]:
                        for kind, body in h["texts"].items():
                            if body:
                                needed[(kind, h["sid"])] = body
                keys = list(needed)
                started = time.perf_counter()
                scores = encoder.scores(text, [needed[k] for k in keys], TOKENS) if keys else []
                data["latency"].append((len(keys), time.perf_counter() - started))
                logit = dict(zip(keys, [float(s) for s in scores], strict=True))
                for pool in ("all", "verified"):
                    for h in row[pool]:
                        h["logit"] = {kind: logit.get((kind, h["sid"])) for kind in h["texts"]}
                        del h["texts"]
                rows.append(row)
                if n % 20 == 0:
                    print(f"{card_set.label}: {n}/{len(prompts)}", file=sys.stderr, flush=True)
            data["sets"][card_set.label] = rows
    return data


def reorder(top: list[dict[str, Any]], weight: float, reads: str, depth: int) -> list[dict[str, Any]]:
    """The adapter's rule (episodic.judge.reranker): score + weight x (logit - the pool's median logit)."""
    pool = top[:depth]
    logits = [h["logit"].get(reads if h["offline"] else "card") for h in pool]
    known = sorted(x for x in logits if x is not None)
    if len(pool) < 2 or not known or weight == 0:
        return top
    centre = known[len(known) // 2]
    keyed = [
        (h["score"] + (weight * (lg - centre) if lg is not None else 0.0), -i)
        for i, (h, lg) in enumerate(zip(pool, logits, strict=True))
    ]
    order = sorted(range(len(pool)), key=lambda i: keyed[i], reverse=True)
    slots = sorted((h["score"] for h in pool), reverse=True)
    out = [dict(pool[i], score=s, judged=logits[i]) for s, i in zip(slots, order, strict=True)]
    return out + top[depth:]


def ranking(
    rows: list[dict[str, Any]], pool: str, weight: float, reads: str, depth: int
) -> tuple[float, float, float]:
    r1 = r3 = rr = 0.0
    dev = [r for r in rows if r["target"]]
    for r in dev:
        top = reorder(r[pool], weight, reads, depth)
        ids = [h["sid"] for h in top]
        rank = ids.index(r["target"]) + 1 if r["target"] in ids else r[pool + "_rank"]
        r1 += rank == 1
        r3 += rank is not None and rank <= 3
        rr += 1 / rank if rank else 0
    n = max(len(dev), 1)
    return r1 / n, r3 / n, rr / n


def hook(
    rows: list[dict[str, Any]],
    weight: float,
    reads: str,
    depth: int,
    floor: float,
    bar: float | None,
    strong: float = 3.5,
    judge_decides: bool = False,
) -> tuple[float, float, float]:
    """(targets given as a full card, negatives given a card, share of cards that are the target): the best
    verified hit when strong (score and 2.2 x floor cosine; below 20 cards the cosine alone), and, with `bar`,
    a judged logit >= bar as well; `judge_decides`: the judge's bar with the weak tier's cosine (1.6 x floor)
    instead of the fused score and the strong cosine."""
    pos = neg = right = cards = 0
    for r in rows:
        top = reorder(r["verified"], weight, reads, depth)
        if not top:
            continue
        best = top[0]
        ok = (
            best["sim"] >= 2.2 * floor
            and best["sim"] >= floor
            and (0 < best["pool"] < 20 or best["score"] >= strong)
        )
        judged = best.get("judged", best["logit"].get(reads if best["offline"] else "card"))
        if judge_decides:
            ok = judged is not None and bar is not None and judged >= bar and best["sim"] >= 1.6 * floor
        elif ok and bar is not None:
            ok = judged is not None and judged >= bar
        if ok:
            cards += 1
            if r["target"]:
                pos += best["sid"] == r["target"]
                right += best["sid"] == r["target"]
            else:
                neg += 1
    npos = max(sum(1 for r in rows if r["target"]), 1)
    nneg = max(sum(1 for r in rows if not r["target"]), 1)
    return pos / npos, neg / nneg, right / max(cards, 1)


def hook_selection(
    top: list[dict[str, Any]], floor: float, weak_bar: float | None, weight: float = 0.2, depth: int = 3
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(full cards, pointers) the hook gives on LLM cards with the defaults (episodic.core.confidence and
    hooks.server_client.select_hits over search_traces' best 3): the judge's p >= 0.5 for a card, and with `weak_bar`
    a judged hit below that probability at most faint (never pointed to)."""
    rank = {"strong": 0, "weak": 1, "faint": 2, None: 3}
    tiers = []
    for i, h in enumerate(reorder(top, weight, "card", depth)[:3]):
        logit = h.get("judged") if i < depth else None
        p = None if logit is None else 1 / (1 + np.exp(-logit))
        small = 0 < h["pool"] < 20
        tier = None
        if p is not None and weak_bar is not None and p < weak_bar:
            tier = None
        elif (p is not None and p >= 0.5 and h["sim"] >= 1.6 * floor) or (
            p is None and h["sim"] >= 2.2 * floor and (small or h["score"] >= 3.5)
        ):
            tier = "strong"
        elif h["sim"] >= 1.6 * floor and (small or h["score"] >= 3.25):
            tier = "weak"
        tiers.append((h["sid"], tier))
    given = [sid_tier for sid_tier in sorted(tiers, key=lambda x: rank[x[1]]) if sid_tier[1]]
    if not given:
        return (), ()
    (best, tier), rest = given[0], [sid for sid, _ in given[1:3]]
    return ((best,), tuple(rest)) if tier == "strong" else ((), (best, *rest))


def pointer_bar(rows: list[dict[str, Any]], floor: float) -> None:
    """The judge's bar for a pointer on LLM cards: per fold the bar with the most targets given as card or
    pointer and at most 0.40 of the negatives given anything, read on the other fold."""

    def figures(fold: str, bar: float | None) -> tuple[float, float, float]:
        pos = [r for r in rows if r["fold"] == fold and r["target"]]
        neg = [r for r in rows if r["fold"] == fold and not r["target"]]
        given = [(r, hook_selection(r["verified"], floor, bar)) for r in pos + neg]
        card = sum(r["target"] in c for r, (c, _) in given[: len(pos)]) / len(pos)
        surfaced = sum(r["target"] in c + p for r, (c, p) in given[: len(pos)]) / len(pos)
        anything = sum(bool(c or p) for _, (c, p) in given[len(pos) :]) / len(neg)
        return card, surfaced, anything

    bars = [None, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]
    for chosen, read in (("A", "B"), ("B", "A")):
        ok = [b for b in bars if figures(chosen, b)[2] <= 0.40]
        bar = max(ok, key=lambda b: (figures(chosen, b)[1], -(b or 0)))
        before, after = figures(read, None), figures(read, bar)
        print(
            f"cards hook pointer bar chosen on {chosen} (p < {bar}: no pointer), read on {read}: target as card "
            f"{before[0]:.3f} -> {after[0]:.3f}, as card or pointer {before[1]:.3f} -> {after[1]:.3f}, "
            f"negatives with anything {before[2]:.3f} -> {after[2]:.3f}"
        )


def report(data: dict[str, Any]) -> None:
    floor = data["floor"]
    sizes = [n for n, _ in data["latency"]]
    seconds = sorted(s for _, s in data["latency"])
    print(
        f"judge latency per prompt ({np.mean(sizes):.1f} pairs, {TOKENS} tokens): p50 {seconds[len(seconds) // 2] * 1000:.0f} ms, "
        f"p95 {seconds[int(len(seconds) * 0.95)] * 1000:.0f} ms"
    )
    for label, rows in data["sets"].items():
        readings = ("opening",) if any(h["offline"] for r in rows for h in r["all"]) else ("card",)
        for chosen, read in (("A", "B"), ("B", "A")):
            pick = [r for r in rows if r["fold"] == chosen]
            held = [r for r in rows if r["fold"] == read]
            # the weight and text that maximise recall@1 (all) + recall@1 (verified) on the choosing fold
            best = max(
                ((w, t) for w in WEIGHTS for t in readings),
                key=lambda wt: (
                    ranking(pick, "all", wt[0], wt[1], DEPTH)[0]
                    + ranking(pick, "verified", wt[0], wt[1], DEPTH)[0],
                    -wt[0],
                ),
            )
            w, t = best
            for pool in ("all", "verified"):
                before = ranking(held, pool, 0.0, t, DEPTH)
                after = ranking(held, pool, w, t, DEPTH)
                print(
                    f"{label} {pool:8s} chosen on {chosen} (w {w}, reads {t}), read on {read}: "
                    f"r@1 {before[0]:.3f} -> {after[0]:.3f}, r@3 {before[1]:.3f} -> {after[1]:.3f}, MRR {before[2]:.3f} -> {after[2]:.3f}"
                )
            # the hook: the judge's bar chosen on the choosing fold (negatives with a card <= 0.05, most targets)
            bars = [None, *np.arange(-6.0, 8.01, 0.5).tolist()]

            def key(
                bar: float | None, pick: list[Any] = pick, w: float = w, t: str = t
            ) -> tuple[float, float]:
                p, n, _ = hook(pick, w, t, DEPTH, floor, bar)
                return (p if n <= 0.05 else -1.0, -(bar or -99))

            bar = max(bars, key=key)

            def key_judge(
                bar: float | None, pick: list[Any] = pick, w: float = w, t: str = t
            ) -> tuple[float, float]:
                p, n, _ = hook(pick, w, t, DEPTH, floor, bar, judge_decides=True)
                return (p if n <= 0.05 else -1.0, -(bar or -99))

            jbar = max(bars[1:], key=key_judge)
            b0 = hook(held, 0.0, t, DEPTH, floor, None)
            b1 = hook(held, w, t, DEPTH, floor, None)
            b2 = hook(held, w, t, DEPTH, floor, bar)
            b3 = hook(held, w, t, DEPTH, floor, jbar, judge_decides=True)
            print(
                f"{label} hook read on {read}: target as card / negatives with a card / cards right: first stage "
                f"{b0[0]:.3f} / {b0[1]:.3f} / {b0[2]:.2f}; judged order {b1[0]:.3f} / {b1[1]:.3f} / {b1[2]:.2f}; "
                f"+ judge bar {bar} {b2[0]:.3f} / {b2[1]:.3f} / {b2[2]:.2f}; "
                f"judge decides (logit >= {jbar}, cosine >= 1.6 x floor) {b3[0]:.3f} / {b3[1]:.3f} / {b3[2]:.2f}"
            )
        for w in WEIGHTS:
            for t in readings:
                figures = [
                    ranking([r for r in rows if r["fold"] == f], p, w, t, DEPTH)
                    for f in "AB"
                    for p in ("all", "verified")
                ]
                print(f"  {label} w {w} reads {t}: " + "  ".join(f"{x[0]:.3f}/{x[1]:.3f}" for x in figures))
    if "cards" in data["sets"]:
        pointer_bar(data["sets"]["cards"], floor)


def chart(data: dict[str, Any], path: Path) -> None:
    """The hook's frontier on LLM cards, both folds: targets given a full card against negatives given one,
    as the fused score's bar moves (first stage, and the judged order) and as the judge's own bar moves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, floor = data["sets"]["cards"], data["floor"]
    weight, depth = 0.2, 3
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, points in (
        (
            "first stage, fused-score bar",
            [hook(rows, 0.0, "opening", depth, floor, None, strong=b) for b in np.arange(2.0, 7.01, 0.25)],
        ),
        (
            "judged order, fused-score bar",
            [hook(rows, weight, "opening", depth, floor, None, strong=b) for b in np.arange(2.0, 7.01, 0.25)],
        ),
        (
            "judge decides (its logit's bar)",
            [
                hook(rows, weight, "opening", depth, floor, b, judge_decides=True)
                for b in np.arange(-4.0, 9.01, 0.5)
            ],
        ),
    ):
        ax.plot([n for _, n, _ in points], [p for p, _, _ in points], marker="o", markersize=3, label=label)
    ax.axvline(0.05, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("in-domain negatives given a full card")
    ax.set_ylabel("dev queries given their target as a full card")
    ax.set_title("The hook's full card on LLM cards (dev set, both folds)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/judge-study.pkl"))
    parser.add_argument("--chart", type=Path, help="write the hook's frontier on LLM cards here (PNG)")
    args = parser.parse_args()
    if args.cache.is_file():
        data = pickle.loads(args.cache.read_bytes())
    else:
        data = collect(args.transcripts, args.eval_dir)
        args.cache.write_bytes(pickle.dumps(data))
    report(data)
    if args.chart:
        chart(data, args.chart)


if __name__ == "__main__":
    main()
