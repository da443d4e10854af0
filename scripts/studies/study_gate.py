"""Study: the judge's weight and depth per card kind, and the hook's full-card gate, on every yardstick.

Yardsticks (`../shared/eval`): dev queries, dev hand negatives, dev leave-one-out negatives (each dev query with
its target left out by the store's filter), and the same three on the fresh set (its `cousins` left out too);
both card sets (the offline distiller's, the folder's LLM cards). Per prompt the first stage's best DEPTH
candidates are kept — every outcome (recall@1, as `episodic eval` ranks) and verified only (the hook's pool) —
with the judge's logit on what it reads per card kind (an LLM card's text, an offline card's opening words)
and on the card's problem alone, the keyword half's raw BM25 (the tenant's own IDF), and the prompt's terms with
their document counts and the ones each candidate holds (its coverage of the prompt). Collected once into
--cache; every weight, depth and gate is then replayed with the shipped rules (episodic.judge.reranker's
order, episodic.core.confidence's tiers, the hook's selection).

Choices are made on dev (the logistic gate is trained on dev positives against dev leave-one-out and hand
negatives) and read on fresh; a choice ships only if it is not worse by more than one standard error on any
yardstick and better on fresh. With --pseudo, pseudo-queries (`episodic eval pseudo-queries`) are collected too,
as targets and as leave-one-out negatives (their own session left out): data neither eval set was made from,
for a gate trained on them alone (study_gate_pseudo.py).

    EPISODIC_RERANKER=none python scripts/studies/study_gate.py ../shared/transcripts ../shared/eval \
        --cache /tmp/gate-study.pkl
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from study_relevance_judge import dev_card_sets, set_memory

DEPTH = 8
PROBLEM_DEPTH = 3  # the judge reads the card's problem alone for the hook's best 3
TOKENS = 160
SETS = ("dev", "fresh")


def prompts(
    eval_dir: Path, pseudo: Path | None = None
) -> list[tuple[str, str, str, str | None, str, tuple[str, ...]]]:
    """(yardstick, id, fold, target, text, left out): positives, hand negatives, leave-one-out negatives; with
    `pseudo`, its queries as `pseudo-pos` and `pseudo-loo` too (no hand negatives)."""
    from episodic.evaluation.cardsets import fold_of
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries

    out: list[tuple[str, str, str, str | None, str, tuple[str, ...]]] = []
    for name in SETS:
        queries = read_queries(eval_dir / f"{name}-queries.jsonl")
        out += [(f"{name}-pos", q.id, fold_of(q.session_id), q.session_id, q.query, ()) for q in queries]
        out += [
            (f"{name}-neg", n.id, fold_of(n.id), None, n.query, ())
            for n in read_negatives(eval_dir / f"{name}-negatives.jsonl")
        ]
        out += [
            (f"{name}-loo", q.id, fold_of(q.session_id), None, q.query, (q.session_id, *q.cousins))
            for q in queries
        ]
    if pseudo is not None:
        queries = read_queries(pseudo)
        out += [("pseudo-pos", q.id, fold_of(q.session_id), q.session_id, q.query, ()) for q in queries]
        out += [
            ("pseudo-loo", q.id, fold_of(q.session_id), None, q.query, (q.session_id, *q.cousins))
            for q in queries
        ]
    return out


def collect(
    transcripts: Path, eval_dir: Path, only: str | None = None, judge: bool = True, pseudo: Path | None = None
) -> dict[str, Any]:
    from episodic.core.search import search_traces
    from episodic.judge.model import cross_encoder, default_model_dir
    from episodic.judge.reranker import HEURISTIC, card_text, offline_text
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters
    from episodic.store.hybrid import query_terms
    from episodic.store.keywords import TenantKeywords, tokens
    from episodic.store.keywords import fold as fold_text
    from episodic.store.render import keyword_text

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    encoder = cross_encoder(default_model_dir()) if judge else None
    asked = prompts(eval_dir, pseudo)
    data: dict[str, Any] = {"floor": embedder.default_min_similarity, "sets": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for card_set in sets:
            if only is not None and card_set.label != only:
                continue
            ranking = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            bodies = {sid: set(tokens(keyword_text(card))) for sid, card in card_set.cards.items()}
            index = TenantKeywords.build(enumerate(map(keyword_text, card_set.cards.values())), len(bodies))
            ranking = replace(ranking, reranker=None)
            hook = replace(ranking, settings=settings.model_copy(update={"max_k": DEPTH, "reranker": "none"}))
            rows = []
            for n, (stick, pid, fold, target, text, left_out) in enumerate(asked):
                row: dict[str, Any] = {"stick": stick, "id": pid, "fold": fold, "target": target}
                terms = list(dict.fromkeys(fold_text(t) for t in query_terms(text)))
                row.update(terms=terms, df=index.doc_counts(terms), cards=index.sessions)
                texts: dict[tuple[str, str], str] = {}
                for pool, memory, include in (("all", ranking, True), ("verified", hook, False)):
                    if pool == "all" and stick.endswith("-loo"):
                        row["all"] = []
                        continue
                    filters = SearchFilters(include_unverified=include, exclude_sessions=list(left_out))
                    hits = search_traces(memory, LOCAL_TENANT, text, k=DEPTH, filters=filters)
                    top = []
                    for rank, h in enumerate(hits[:DEPTH]):
                        offline = h.record.distiller.kind == HEURISTIC
                        sid = h.record.session_id
                        reads = offline_text(h.record, "opening") if offline else card_text(h.record)
                        if reads:
                            texts[("reads", sid)] = reads
                        if pool == "verified" and rank < PROBLEM_DEPTH and h.record.card.problem.strip():
                            texts[("problem", sid)] = h.record.card.problem.strip()
                        top.append(
                            {
                                "sid": sid,
                                "score": h.score,
                                "sim": h.similarity,
                                "pool": h.pool_size,
                                "offline": offline,
                                "kw": h.keyword_score,
                                "verified": h.record.card.outcome.value == "verified",
                                "present": [t for t in terms if t in bodies.get(sid, set())],
                            }
                        )
                    row[pool] = top
                keys = list(texts)
                scores = (
                    encoder.scores(text, [texts[k] for k in keys], TOKENS).tolist()
                    if keys and encoder
                    else []
                )
                logit = dict(zip(keys, scores, strict=True)) if encoder else {}
                for pool in ("all", "verified"):
                    for h in row[pool]:
                        h["logit"] = logit.get(("reads", h["sid"]))
                        h["problem_logit"] = logit.get(("problem", h["sid"]))
                rows.append(row)
                if n % 50 == 0:
                    print(f"{card_set.label}: {n}/{len(asked)}", file=sys.stderr, flush=True)
            data["sets"][card_set.label] = rows
    return data


# ------------------------------------------------------------------------------------------- the replay


def reorder(top: list[dict[str, Any]], weight: float | None, depth: int) -> list[dict[str, Any]]:
    """episodic.judge.reranker's order: score + weight x (logit - the judged pool's median logit) over the
    best `depth`; the slots keep the first stage's scores; each judged hit carries its logit as `judged`."""
    pool = [dict(h) for h in top[:depth]]
    rest = [dict(h, judged=None) for h in top[depth:]]
    logits = [h["logit"] if weight is not None else None for h in pool]
    known = sorted(x for x in logits if x is not None)
    if len(pool) < 2 or not known:
        return [dict(h, judged=None) for h in pool] + rest
    centre = known[len(known) // 2]
    keyed = [
        (h["score"] + ((weight or 0.0) * (lg - centre) if lg is not None else 0.0), -i)
        for i, (h, lg) in enumerate(zip(pool, logits, strict=True))
    ]
    order = sorted(range(len(pool)), key=lambda i: keyed[i], reverse=True)
    slots = sorted((h["score"] for h in pool), reverse=True)
    return [dict(pool[i], score=s, judged=logits[i]) for s, i in zip(slots, order, strict=True)] + rest


def probability(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-logit))


GATE_FEATURES: tuple[str, ...] = ("logit", "margin", "score", "problem_logit", "keyword")


def gate_features(top: list[dict[str, Any]], i: int) -> list[float]:
    """The signals of hit i among the judged hits: its logit, its margin over the best other judged logit,
    its fused score, the judge on the card's problem alone, and log(1 + the keyword half's raw BM25)."""
    h = top[i]
    others = [x["judged"] for j, x in enumerate(top) if j != i and x.get("judged") is not None]
    own = h["judged"] if h.get("judged") is not None else -10.0
    margin = own - max(others) if others else 0.0
    problem = h["problem_logit"] if h.get("problem_logit") is not None else own
    return [own, margin, h["score"], problem, math.log1p(max(h["kw"], 0.0))]


def tiers(
    top: list[dict[str, Any]], floor: float, gate: dict[str, Any], shown: int = 3
) -> list[tuple[str, str | None]]:
    """(session, tier) of the hook's best `shown` after the judge's order, by episodic.core.confidence."""
    out = []
    for i, h in enumerate(top[:shown]):
        small = 0 < h["pool"] < 20
        p = probability(h["judged"]) if h.get("judged") is not None else None
        fused_strong = h["sim"] >= 2.2 * floor and (small or h["score"] >= 3.5)
        weak = h["sim"] >= 1.6 * floor and (small or h["score"] >= 3.25)
        faint = h["sim"] >= 1.4 * floor and (small or h["score"] >= 2.0)
        if p is not None and p < 0.002:
            out.append((h["sid"], "faint" if faint else None))
            continue
        strong = strong_gate(top, i, p, fused_strong, h["sim"] >= 1.6 * floor, gate)
        out.append((h["sid"], "strong" if strong else "weak" if weak else "faint" if faint else None))
    return out


def strong_gate(
    top: list[dict[str, Any]],
    i: int,
    p: float | None,
    fused_strong: bool,
    weak_cosine: bool,
    gate: dict[str, Any],
) -> bool:
    kind = gate["kind"]
    if p is None or kind == "fused":  # an unjudged hit keeps the fused rule
        return fused_strong
    if kind == "judge":
        return p >= gate["p"] and weak_cosine
    if kind == "both":
        return fused_strong and p >= gate["p"]
    if kind == "model":
        x = np.r_[gate_features(top, i), 1.0]
        # as shipped: the judge's own bar (judge_strong, 0.5) and the gate's
        return bool(weak_cosine and p >= 0.5 and probability(float(x @ gate["w"])) >= gate["p"])
    raise ValueError(kind)


def hook_given(
    row: dict[str, Any], weight: float | None, depth: int, floor: float, gate: dict[str, Any]
) -> tuple[str | None, list[str]]:
    """(full card, pointers) the hook injects: the best verified hit as a card when strong (episodic.hooks)."""
    top = reorder(row["verified"], weight, depth)
    labelled = [(sid, t) for sid, t in tiers(top, floor, gate) if t in ("strong", "weak")]
    labelled.sort(key=lambda x: 0 if x[1] == "strong" else 1)
    if not labelled:
        return None, []
    best, tier = labelled[0]
    rest = [sid for sid, _ in labelled[1:]]
    return (best, rest) if tier == "strong" else (None, [best, *rest])


def se(share: float, n: int) -> float:
    return math.sqrt(max(share * (1 - share), 0.0) / n) if n else 0.0


def figures(
    rows: list[dict[str, Any]],
    weight: float | None,
    depth: int,
    floor: float,
    gate: dict[str, Any],
    fold: str | None = None,
) -> dict[str, tuple[float, float, int]]:
    """Per yardstick: (share, se, n): positives' target as a full card, negatives given a full card."""
    return shares(rows, lambda r: hook_given(r, weight, depth, floor, gate)[0], fold)


def shares(
    rows: list[dict[str, Any]], give: Any, fold: str | None = None
) -> dict[str, tuple[float, float, int]]:
    """Per yardstick, what `give(row)` (the full card's session or None) does: (share, se, n) of positives
    given their target, of negatives given anything."""
    out: dict[str, tuple[float, float, int]] = {}
    for stick in sorted({r["stick"] for r in rows}):
        chosen = [r for r in rows if r["stick"] == stick and (fold is None or r["fold"] == fold)]
        given = [give(r) for r in chosen]
        if stick.endswith("-pos"):
            share = float(np.mean([g == r["target"] for g, r in zip(given, chosen, strict=True)]))
        else:
            share = float(np.mean([g is not None for g in given]))
        out[stick] = (share, se(share, len(chosen)), len(chosen))
    return out


def recall_at_1(
    rows: list[dict[str, Any]], weight: float | None, depth: int, fold: str | None = None
) -> dict[str, tuple[float, float, int]]:
    out = {}
    for stick in sorted({r["stick"] for r in rows if r["stick"].endswith("-pos")}):
        chosen = [r for r in rows if r["stick"] == stick and (fold is None or r["fold"] == fold)]
        hit = [bool(r["all"]) and reorder(r["all"], weight, depth)[0]["sid"] == r["target"] for r in chosen]
        share = float(np.mean(hit))
        out[stick] = (share, se(share, len(chosen)), len(chosen))
    return out


# ------------------------------------------------------------------------------------------- the gate model


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Logistic regression by Newton's method, an L2 penalty on the weights (not the bias)."""
    x1 = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x1.shape[1])
    penalty = np.r_[np.ones(len(w) - 1), 0.0]
    for _ in range(50):
        p = 1 / (1 + np.exp(-x1 @ w))
        grad = x1.T @ (p - y) + l2 * penalty * w
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.diag(penalty)
        w -= np.linalg.solve(hess, grad)
    return w


def training_pairs(
    rows: list[dict[str, Any]], weight: float | None, depth: int, used: list[int], train_on: str = "dev"
) -> tuple[np.ndarray, np.ndarray]:
    """One set only (`train_on`): the hook's would-be card (the first judged verified hit) of each of its
    prompts; label 1 when it is a positive's target, 0 for a wrong hit, a hand negative's or a leave-one-out
    negative's."""
    xs, ys = [], []
    for r in rows:
        if not r["stick"].startswith(f"{train_on}-"):
            continue
        top = reorder(r["verified"], weight, depth)
        for i, h in enumerate(top[:1]):
            if h.get("judged") is None:
                continue
            xs.append([gate_features(top, i)[j] for j in used])
            ys.append(float(r["target"] is not None and h["sid"] == r["target"]))
    return np.asarray(xs), np.asarray(ys)


def model_gate(
    rows: list[dict[str, Any]],
    weight: float | None,
    depth: int,
    used: list[int],
    p: float,
    train_on: str = "dev",
) -> dict[str, Any]:
    x, y = training_pairs(rows, weight, depth, used, train_on)
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    w = fit((x - mean) / spread, y)
    # back to raw features: w . (x - m) / s + b = (w / s) . x + (b - sum(w m / s))
    raw = np.zeros(len(GATE_FEATURES) + 1)
    for j, k in enumerate(used):
        raw[k] = w[j] / spread[j]
    raw[-1] = w[-1] - float(np.sum(w[:-1] * mean / spread))
    return {"kind": "model", "w": raw, "p": p, "used": [GATE_FEATURES[k] for k in used]}


def line(name: str, f: dict[str, tuple[float, float, int]]) -> str:
    return name + " | " + " | ".join(f"{k} {v[0]:.3f}±{v[1]:.3f}" for k, v in f.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gate-study.pkl"))
    parser.add_argument("--only", help="collect one card set (heuristic | cards) into --cache, then stop")
    parser.add_argument("--no-judge", action="store_true", help="collect without the judge (offline cards)")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="caches collected with --only")
    parser.add_argument(
        "--pseudo", type=Path, help="pseudo-queries JSONL: collect pseudo-pos and pseudo-loo too"
    )
    args = parser.parse_args()
    if args.only:
        data = collect(
            args.transcripts, args.eval_dir, args.only, judge=not args.no_judge, pseudo=args.pseudo
        )
        args.cache.write_bytes(pickle.dumps(data))
        return
    if args.merge:
        parts = [pickle.loads(p.read_bytes()) for p in args.merge]
        data = {"floor": parts[0]["floor"], "sets": {k: v for p in parts for k, v in p["sets"].items()}}
        args.cache.write_bytes(pickle.dumps(data))
    elif args.cache.exists():
        data = pickle.loads(args.cache.read_bytes())
    else:
        data = collect(args.transcripts, args.eval_dir, pseudo=args.pseudo)
        args.cache.write_bytes(pickle.dumps(data))
    floor = data["floor"]
    for label, rows in data["sets"].items():
        print(f"\n## {label}")
        print("### ranking: recall@1 (all outcomes) by weight x depth (fold A, fold B)")
        for weight in (None, 0.2, 0.5, 1.0, 2.0):
            for depth in (3, 5, 8):
                both = {f: recall_at_1(rows, weight, depth, f) for f in "AB"}
                print(
                    line(f"w={weight} d={depth}", recall_at_1(rows, weight, depth)),
                    "||",
                    " ".join(f"{k}:{both['A'][k][0]:.3f}/{both['B'][k][0]:.3f}" for k in both["A"]),
                )
        print("### gates (the hook): share (± se) per yardstick; positives: target as a full card")
        for weight, depth in ((None, 3), (0.2, 3), (0.5, 3), (1.0, 3), (1.0, 5), (2.0, 5)):
            gates: list[tuple[str, dict[str, Any]]] = [("fused", {"kind": "fused"})]
            gates += [(f"judge>={p}", {"kind": "judge", "p": p}) for p in (0.5, 0.9, 0.97)]
            gates += [(f"both p>={p}", {"kind": "both", "p": p}) for p in (0.5, 0.8)]
            if weight is not None:
                for used in ([0, 1], [0, 1, 2], [0, 1, 2, 4], [0, 1, 2, 3, 4]):
                    for p in (0.5, 0.6, 0.7, 0.8, 0.9):
                        gates.append((f"model{used} p>={p}", model_gate(rows, weight, depth, used, p)))
            for name, gate in gates:
                print(line(f"w={weight} d={depth} {name}", figures(rows, weight, depth, floor, gate)))
        for weight, depth, used in ((1.0, 3, [0, 1, 2, 4]), (1.0, 5, [0, 1, 2, 4]), (0.5, 3, [0, 1, 2, 4])):
            gate = model_gate(rows, weight, depth, used, 0.5)
            print(
                f"coefficients w={weight} d={depth}:",
                dict(zip(GATE_FEATURES, gate["w"][:-1].round(4), strict=True)),
                "bias",
                round(float(gate["w"][-1]), 4),
            )


if __name__ == "__main__":
    main()
