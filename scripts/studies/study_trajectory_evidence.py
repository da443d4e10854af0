"""Study: does evidence from the session's *trajectory* pick the right card first, and surely?

The first stage (`search_traces`, similarity floor off, as `episodic eval` runs it) gives its top 20 for
each dev query and dev negative, on both card sets, over every card ("all", the eval's `hybrid`) and over
verified cards only ("verified", the hook's index). Each candidate then gets one evidence figure: the
keyword half's own BM25 (`store.keywords.TenantKeywords`, FTS5's formula, terms in most documents weigh
nothing) of the query over a text of the candidate's scrubbed trajectory instead of its card. Texts:

- `trajectory`: prompts, assistant text, tool commands and outputs (`evaluation.systems.raw.session_text`);
- `conversation`: the user's prompts and the assistant's text only; `tools`: tool commands and outputs only;
- `not-in-card`: the whole trajectory without the words of the card's keyword text (what the card lacks).

Evidence forms: `top20` the BM25 / the best of the 20; `z20` z-scored over the 20; `zpool` z-scored over
every session; `idf` the share of the query's IDF mass that the text holds; `rare` the same over terms in
at most 10 % of the sessions; `ident` the same over the query's identifier-shaped words (flags, paths,
dotted names, words with digits, camelCase), found as substrings of the text. A fusion re-scores the 20 as `score + w x evidence`: the one weight is chosen
on one fold (summed recall@1 of both card sets and both indexes; ties to the smaller weight) and read on
the other fold. "Sure" as the hook reads it: the best verified hit is a full card when its score clears a
bar and its cosine clears 2.2 x the embedder's floor; the bar giving most targets a card with at most 10 %
of the fold's negatives given one is chosen on one fold and read on the other, for the first stage's score,
the re-scored score, and the first stage's score with a second bar on the top hit's evidence.

Nothing here is trained on the dev queries beyond one weight or one or two bars per fold.

    python scripts/studies/study_trajectory_evidence.py ../shared/transcripts ../shared/eval [saved.pickle]
"""

from __future__ import annotations

import math
import pickle
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

TOP = 20
RARE = 0.10
WEIGHTS = np.round(np.arange(0.0, 3.01, 0.05), 2)
BARS = np.round(np.arange(2.0, 8.01, 0.125), 3)
TEXTS = ("trajectory", "conversation", "tools", "not-in-card")
FORMS = ("top20", "z20", "zpool", "idf", "rare", "ident")
# a query word shaped like an identifier: a flag, a path or dotted name, letters with digits, camelCase, CAPS
IDENTIFIER = re.compile(
    r"^(--?[a-z][\w-]+|.+[./_:].+|.*[a-zA-Z].*\d.*|.*\d.*[a-zA-Z].*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*)$"
)
STRONG_COSINE = 2.2  # x the embedder's floor, as the confidence rule's strong tier
NEGATIVES_WITH_CARD = 0.10
Row = dict[str, Any]


def collect(transcripts: Path, eval_dir: Path) -> dict[str, Any]:
    """Top 20 per prompt, card set and index; every session's texts; each card set's keyword texts."""
    from episodic.core.search import search_traces
    from episodic.evaluation.cardsets import fold_of
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries
    from episodic.evaluation.systems.raw import _tool_text, session_text
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters
    from episodic.store.render import keyword_text
    from study_relevance_judge import (
        dev_card_sets,
        set_memory,
    )  # the previous study's harness (scripts/ is on sys.path)

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    prompts: list[tuple[str, str, str | None, str]] = [
        ("dev", fold_of(q.session_id), q.session_id, q.query)
        for q in read_queries(eval_dir / "dev-queries.jsonl")
    ]
    prompts += [
        ("neg", fold_of(n.id), None, n.query) for n in read_negatives(eval_dir / "dev-negatives.jsonl")
    ]
    texts: dict[str, dict[str, str]] = {"trajectory": {}, "conversation": {}, "tools": {}}
    for sid, trajectory in corpus.trajectories.items():
        texts["trajectory"][sid] = session_text(trajectory)
        said = [e.text for e in trajectory.events if e.kind in ("prompt", "assistant") and e.text]
        texts["conversation"][sid] = "\n".join(said)
        done = [_tool_text(e.tool) for e in trajectory.events if e.kind == "tool" and e.tool is not None]
        texts["tools"][sid] = "\n".join(done)
    data: dict[str, list[Row]] = {}
    cards: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for card_set in sets:
            cards[card_set.label] = {sid: keyword_text(card) for sid, card in card_set.cards.items()}
            memory = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            size = max(len(card_set.cards), 1)
            rows = []
            for kind, part, target, query in prompts:
                entry: Row = {"kind": kind, "fold": part, "target": target, "query": query}
                for name, include in (("verified", False), ("all", True)):
                    # k = every card, as `episodic eval` asks (a smaller k fuses fewer candidates), then the 20
                    filters = SearchFilters(include_unverified=include)
                    hits = search_traces(memory, LOCAL_TENANT, query, k=size, filters=filters)[:TOP]
                    entry[name] = [
                        {"sid": h.record.session_id, "score": h.score, "sim": h.similarity} for h in hits
                    ]
                rows.append(entry)
            data[card_set.label] = rows
    return {"data": data, "texts": texts, "cards": cards, "floor": embedder.default_min_similarity}


def identifiers(query: str) -> list[str]:
    """The query's identifier-shaped words, lower case (matched as substrings of the trajectory)."""
    words = (w.strip(".,;:!?()[]{}'\"`") for w in query.split())
    return list(dict.fromkeys(w.lower() for w in words if len(w) >= 3 and IDENTIFIER.match(w)))


def evidence(rows: list[Row], bodies: dict[str, str]) -> dict[int, dict[str, dict[str, float]]]:
    """Per row (by position) and candidate session: each evidence form over the given texts."""
    from episodic.store.hybrid import query_terms
    from episodic.store.keywords import TenantKeywords, tokens

    ids = list(bodies)
    position = {sid: i for i, sid in enumerate(ids)}
    index = TenantKeywords.build(((i, bodies[sid]) for i, sid in enumerate(ids)), len(ids))
    held = {sid: set(tokens(text)) for sid, text in bodies.items()}
    lowered = {sid: text.lower() for sid, text in bodies.items()}
    found: dict[str, set[str]] = {}  # identifier -> sessions whose text holds it
    out: dict[int, dict[str, dict[str, float]]] = {}
    for n, row in enumerate(rows):
        terms = query_terms(row["query"])
        counts = index.doc_counts(terms)
        idf = {t: float(np.log(1 + (len(ids) - c + 0.5) / (c + 0.5))) for t, c in counts.items() if c}
        rare = {t: v for t, v in idf.items() if counts[t] <= RARE * len(ids)}
        bm25 = index.scores(terms)
        pool_mean, pool_spread = float(bm25.mean()), float(bm25.std()) or 1.0
        names = identifiers(row["query"])
        for name in names:
            if name not in found:
                found[name] = {sid for sid, text in lowered.items() if name in text}
        ident = {
            n: math.log(1 + (len(ids) - len(found[n]) + 0.5) / (len(found[n]) + 0.5))
            for n in names
            if found[n]
        }
        sids = {h["sid"] for name in ("all", "verified") for h in row[name]}
        figures: dict[str, dict[str, float]] = {}
        for name in ("all", "verified"):
            raw = np.array([bm25[position[h["sid"]]] for h in row[name]])
            best = float(raw.max()) if raw.size and raw.max() > 0 else 1.0
            mean, spread = (float(raw.mean()), float(raw.std()) or 1.0) if raw.size else (0.0, 1.0)
            for h, value in zip(row[name], raw, strict=True):
                figures[f"{name}:{h['sid']}"] = {"top20": value / best, "z20": (value - mean) / spread}
        for sid in sids:
            value = float(bm25[position[sid]])
            for name in ("all", "verified"):
                if f"{name}:{sid}" in figures:
                    figures[f"{name}:{sid}"].update(
                        zpool=(value - pool_mean) / pool_spread,
                        idf=sum(v for t, v in idf.items() if t in held[sid]) / (sum(idf.values()) or 1.0),
                        rare=sum(v for t, v in rare.items() if t in held[sid]) / (sum(rare.values()) or 1.0),
                        ident=sum(v for n, v in ident.items() if sid in found[n])
                        / (sum(ident.values()) or 1.0),
                    )
        out[n] = figures
    return out


def order(
    row: Row, figures: dict[str, dict[str, float]], name: str, form: str, w: float
) -> list[tuple[float, Row]]:
    scored = [(h["score"] + w * figures[f"{name}:{h['sid']}"][form], h) for h in row[name]]
    return sorted(scored, key=lambda p: -p[0])  # stable: ties keep the first stage's order


def recall(rows: list[Row], ev: dict[int, Any], name: str, form: str, w: float, at: int) -> float:
    found = [
        any(h["sid"] == row["target"] for _, h in order(row, ev[n], name, form, w)[:at])
        for n, row in enumerate(rows)
        if row["kind"] == "dev"
    ]
    return float(np.mean(found))


def sure(
    rows: list[Row],
    take: Callable[[int, Row], tuple[float, float, str | None]],
    bars: list[tuple[float, float]],
) -> dict[tuple[float, float], tuple[float, float]]:
    """Per (score bar, evidence bar): (targets given as the card, negatives given a card)."""
    tops = [(row, *take(n, row)) for n, row in enumerate(rows)]
    out = {}
    for bar, gate in bars:
        given = [(row, sid) for row, score, ev, sid in tops if score >= bar and ev >= gate]
        pos = sum(row["kind"] == "dev" for row in rows) or 1
        neg = sum(row["kind"] == "neg" for row in rows) or 1
        out[(bar, gate)] = (
            sum(row["kind"] == "dev" and sid == row["target"] for row, sid in given) / pos,
            sum(row["kind"] == "neg" for row, _ in given) / neg,
        )
    return out


def pairs(rows: list[Row], ev: dict[int, Any]) -> str:
    """How often the trajectory's BM25 orders the target and the first stage's other best hit rightly."""
    ahead = behind = lifts = sinks = 0
    for n, row in enumerate(rows):
        hits = [h["sid"] for h in row["all"]]
        if row["kind"] != "dev" or row["target"] not in hits[:5] or len(hits) < 2:
            continue
        rival = hits[1] if hits[0] == row["target"] else hits[0]
        target, other = (ev[n][f"all:{sid}"]["top20"] for sid in (row["target"], rival))
        if hits[0] == row["target"]:
            ahead, behind = ahead + (target > other), behind + (target < other)
        else:
            lifts, sinks = lifts + (target > other), sinks + (target < other)
    return (
        f"target first: its evidence above the second's {ahead}, below {behind}; "
        f"target 2nd-5th: above the first's {lifts}, below {sinks}"
    )


def chosen_bar(curve: dict[tuple[float, float], tuple[float, float]]) -> tuple[float, float]:
    allowed = [(v, k) for k, v in curve.items() if v[1] <= NEGATIVES_WITH_CARD]
    return max(allowed, key=lambda p: (p[0][0], -p[0][1], -p[1][0], -p[1][1]))[1]


def main(transcripts: Path, eval_dir: Path, saved: Path | None = None) -> None:
    if saved is not None and saved.exists():  # a third argument keeps what `collect` gathered between runs
        got = pickle.loads(saved.read_bytes())
    else:
        got = collect(transcripts, eval_dir)
        if saved is not None:
            saved.write_bytes(pickle.dumps(got))
    data, floor = got["data"], got["floor"]
    labels = list(data)
    cells = [(label, name) for label in labels for name in ("all", "verified")]
    print(
        "recall@1 (recall@3) on the read fold: first stage -> score + w x evidence, w chosen on the other fold"
    )
    print("| text | form | w from | read | " + " | ".join(f"{lab} {name}" for lab, name in cells) + " |")
    print("|---" * (4 + len(cells)) + "|")
    evidences: dict[str, dict[str, Any]] = {}
    weights: dict[tuple[str, str, str], float] = {}
    for text in TEXTS:
        ev: dict[str, Any] = {}
        for label in labels:
            if text == "not-in-card":
                from episodic.store.keywords import tokens

                card_words = {sid: set(tokens(body)) for sid, body in got["cards"][label].items()}
                bodies = {
                    sid: " ".join(t for t in tokens(body) if t not in card_words.get(sid, set()))
                    for sid, body in got["texts"]["trajectory"].items()
                }
            else:
                bodies = got["texts"][text]
            ev[label] = evidence(data[label], bodies)
        evidences[text] = ev
        for form in FORMS:
            for pick, read in (("A", "B"), ("B", "A")):

                def objective(w: float, part: str = pick, f: str = form, e: dict[str, Any] = ev) -> float:
                    total = 0.0
                    for label, name in cells:
                        picked = [(n, r) for n, r in enumerate(data[label]) if r["fold"] == part]
                        total += recall(
                            [r for _, r in picked],
                            {i: e[label][n] for i, (n, _) in enumerate(picked)},
                            name,
                            f,
                            w,
                            1,
                        )
                    return total

                w = float(max(WEIGHTS, key=lambda x: (round(objective(x), 6), -x)))
                weights[(text, form, pick)] = w
                shown = []
                for label, name in cells:
                    picked = [(n, r) for n, r in enumerate(data[label]) if r["fold"] == read]
                    rows, sub = [r for _, r in picked], {i: ev[label][n] for i, (n, _) in enumerate(picked)}
                    before = (recall(rows, sub, name, form, 0, 1), recall(rows, sub, name, form, 0, 3))
                    after = (recall(rows, sub, name, form, w, 1), recall(rows, sub, name, form, w, 3))
                    shown.append(f"{before[0]:.3f} ({before[1]:.3f}) -> {after[0]:.3f} ({after[1]:.3f})")
                print(f"| {text} | {form} | {w:.2f} on {pick} | {read} | " + " | ".join(shown) + " |")
    print()
    dev = [row for row in data[labels[0]] if row["kind"] == "dev"]
    named = sum(bool(identifiers(row["query"])) for row in dev)
    print(f"dev queries with an identifier-shaped word: {named} of {len(dev)}")
    for label in labels:
        print(f"{label}, all cards, trajectory BM25: " + pairs(data[label], evidences["trajectory"][label]))
    print()
    print(
        f"sure: target as a full card / negatives with a card on the read fold, bars chosen on the other (<= {NEGATIVES_WITH_CARD:.0%} of its negatives)"
    )
    ev = evidences["trajectory"]
    for label in labels:
        for form, gates in (("zpool", np.arange(-1.0, 6.01, 0.25)), ("idf", np.arange(0.0, 1.001, 0.05))):
            for pick, read in (("A", "B"), ("B", "A")):

                def take(
                    n: int, row: Row, w: float = 0.0, lab: str = label, f: str = form
                ) -> tuple[float, float, str | None]:
                    ranked = order(row, ev[lab][n], "verified", f, w)
                    if not ranked:
                        return -np.inf, -np.inf, None
                    score, top = ranked[0]
                    usable = top["sim"] >= STRONG_COSINE * floor
                    return (score if usable else -np.inf), ev[lab][n][f"verified:{top['sid']}"][f], top["sid"]

                def fold_rows(part: str, lab: str = label) -> list[tuple[int, Row]]:
                    return [(n, r) for n, r in enumerate(data[lab]) if r["fold"] == part]

                def curve(
                    part: str, bars: list[tuple[float, float]], w: float = 0.0
                ) -> dict[tuple[float, float], tuple[float, float]]:
                    picked = fold_rows(part)
                    index = {id(r): n for n, r in picked}
                    return sure([r for _, r in picked], lambda _i, r: take(index[id(r)], r, w), bars)

                plain = [(float(b), -np.inf) for b in BARS]
                gated = [(float(b), float(g)) for b in BARS for g in gates]
                first = chosen_bar(curve(pick, plain))
                second = chosen_bar(curve(pick, gated))
                w = weights[("trajectory", form, pick)]
                fused = chosen_bar(curve(pick, plain, w))
                line = [
                    f"score >= {first[0]:.2f}: {curve(read, [first])[first][0]:.3f} / {curve(read, [first])[first][1]:.3f}"
                ]
                line.append(
                    f"score + {w:.2f} x {form} >= {fused[0]:.2f}: "
                    f"{curve(read, [fused], w)[fused][0]:.3f} / {curve(read, [fused], w)[fused][1]:.3f}"
                )
                line.append(
                    f"+ {form} >= {second[1]:.2f} (score >= {second[0]:.2f}): "
                    f"{curve(read, [second])[second][0]:.3f} / {curve(read, [second])[second][1]:.3f}"
                )
                print(f"- {label}, {form}, bars from {pick}, read {read}: " + "; ".join(line))


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/transcripts"),
        Path(sys.argv[2]) if len(sys.argv) > 2 else Path("../shared/eval"),
        Path(sys.argv[3]) if len(sys.argv) > 3 else None,
    )
