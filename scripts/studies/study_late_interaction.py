"""Study: does late interaction (ColBERT-style MaxSim) with MiniLM's own token vectors reorder
the first stage's top 20 better than its fused score?

For each dev query and each card set, the first stage (`search_traces`, as `episodic eval` runs it: every
card, and the verified-only view the hook searches) gives its top 20. Each candidate card is rendered
(its problem; problem + insight; the `semantic` and `struct` renderings; every field), and MiniLM's
last-layer token vectors of the query and the card are compared: for each query word piece, the best
cosine among the card's pieces; the score is their mean (optionally IDF-weighted over the card set, with
[CLS]/[SEP], punctuation and stopwords dropped). Used alone, or fused: score + w * z(maxsim), z over the
20 candidates. Every choice (the field, the filter, the weighting, w) is made on one dev fold and read
on the other, both ways; the full grid is printed beside it. Latency of the second stage for 20
candidates is measured both ways: card token vectors computed at query time, or stored at index time.

    python scripts/studies/study_late_interaction.py ../shared/transcripts ../shared/eval [--reuse /tmp/li.pkl]

Measured 2026-12-03 (dev set, 186 queries; recall@1/@3, every card / verified only as the hook searches).
One setting for both card sets, chosen on one fold, read on the other:
  chosen on A (struct+semantic pieces, no punctuation, IDF, w 3.00), read on B:
    heuristic 0.631/0.786 (first stage 0.619/0.821), verified 0.488/0.583 (0.500/0.607)
    LLM cards 0.810/0.917 (first stage 0.750/0.929), verified 0.595/0.631 (0.571/0.655)
  chosen on B (every field, content pieces, IDF, w 0.50), read on A:
    heuristic 0.667/0.804 (first stage 0.627/0.784), verified 0.588/0.725 (0.569/0.696)
    LLM cards 0.814/0.912 (first stage 0.775/0.912), verified 0.686/0.794 (0.676/0.784)
Not the +0.05 on both card sets with recall@3 held, so not adopted. Query-time card vectors for 20
candidates: p50 0.9-2.7 s (load 3-4, 2 cores); stored (float16, 60-215 kB a card): 2-47 ms.
"""

from __future__ import annotations

import math
import os
import pickle
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TOP = 20
FIELDS = ("problem", "problem+insight", "semantic", "struct", "all")
# the pieces of the `struct` and `semantic` renderings together: what indexing already computes (no extra pass)
UNION = "struct+semantic"
FILTERS = ("pieces", "words", "content")  # every piece; no [CLS]/[SEP]/punctuation; and no stopwords
WEIGHTINGS = ("mean", "idf")
WEIGHTS = tuple(np.round(np.arange(0.0, 3.01, 0.25), 2))
_PUNCT = re.compile(r"^(##)?[^\w]+$")
_STOP_WORDS = (
    "a an and are as at be been but by can cant did do does for from get got had has have how i if in into "
    "is it its just my no not of on only or our so still than that the their them then there this to use "
    "used using was we were what when which why with you your after before also"
)
STOP = frozenset(_STOP_WORDS.split())


def fold(session_id: str) -> str:
    from episodic.evaluation.cardsets import fold_of

    return fold_of(session_id)


def field_text(card: Any, field: str) -> str:
    from episodic.store.render import keyword_text, render

    if field == "problem":
        return str(card.problem)
    if field == "problem+insight":
        return "\n".join(p for p in (card.problem, card.insight) if p)
    if field == "all":
        return keyword_text(card)
    return render(card, field)


def kept(tokens: list[str], kind: str) -> np.ndarray:
    """Which of a text's word pieces take part (a boolean mask)."""
    keep = []
    for piece in tokens:
        special = piece in ("[CLS]", "[SEP]", "[PAD]")
        punct = bool(_PUNCT.match(piece))
        stop = piece in STOP
        keep.append(
            kind == "pieces"
            or (kind == "words" and not special and not punct)
            or (kind == "content" and not special and not punct and not stop)
        )
    mask = np.asarray(keep, dtype=bool)
    return mask if mask.any() else np.ones(len(tokens), dtype=bool)


def collect(transcripts: Path, eval_dir: Path) -> dict[str, Any]:
    from episodic.core.search import search_traces
    from episodic.embed.minilm import MiniLMEmbedder
    from episodic.evaluation.queries import read_queries
    from episodic.kernel.models import LOCAL_TENANT, SearchFilters
    from episodic.scrub import Scrubber
    from study_relevance_judge import dev_card_sets, set_memory  # the same harness (scripts/ is on the path)

    settings, corpus, distiller, sets, embedder = dev_card_sets(transcripts, eval_dir)
    tokens = MiniLMEmbedder(workers=1)
    scrub = Scrubber.from_settings(settings)
    queries = read_queries(eval_dir / "dev-queries.jsonl")
    query_texts = [scrub.scrub(q.query[:2000]) for q in queries]
    data: dict[str, Any] = {"queries": [], "sets": {}}
    for q, (pieces, vectors) in zip(queries, tokens.token_vectors(query_texts), strict=True):
        data["queries"].append(
            {"target": q.session_id, "fold": fold(q.session_id), "pieces": pieces, "tv": vectors}
        )
    with tempfile.TemporaryDirectory() as workdir:
        for card_set in sets:
            memory = set_memory(settings, corpus, distiller, embedder, card_set, Path(workdir))
            size = max(len(card_set.cards), 1)
            runs: dict[str, list[list[dict[str, Any]]]] = {}
            for name, include in (("all", True), ("verified", False)):
                filters = SearchFilters(include_unverified=include)
                runs[name] = [
                    [
                        {"sid": h.record.session_id, "score": h.score, "sim": h.similarity}
                        for h in search_traces(memory, LOCAL_TENANT, q.query, k=size, filters=filters)[:TOP]
                    ]
                    for q in queries
                ]
            ids = list(card_set.cards)
            fields, texts = {}, {}
            for field in FIELDS:
                texts[field] = {sid: field_text(card_set.cards[sid], field) for sid in ids}
                fields[field] = dict(
                    zip(ids, tokens.token_vectors([texts[field][s] for s in ids]), strict=True)
                )
            data["sets"][card_set.label] = {"runs": runs, "fields": fields, "texts": texts}
    return data


def idf_table(cards: dict[str, tuple[list[str], np.ndarray]]) -> tuple[dict[str, float], float]:
    """BM25's IDF of each word piece over the card set's texts, and the value for an unseen piece."""
    n = len(cards)
    df: dict[str, int] = {}
    for pieces, _ in cards.values():
        for piece in set(pieces):
            df[piece] = df.get(piece, 0) + 1
    table = {p: math.log(1 + (n - d + 0.5) / (d + 0.5)) for p, d in df.items()}
    return table, math.log(1 + (n + 0.5) / 0.5)


def maxsim(
    query: tuple[list[str], np.ndarray],
    card: tuple[list[str], np.ndarray],
    kind: str,
    idf: tuple[dict[str, float], float] | None,
) -> float:
    """Mean (or IDF-weighted mean) over the query's kept pieces of the best cosine among the card's."""
    q_pieces, q_vectors = query
    c_pieces, c_vectors = card
    q_keep, c_keep = kept(q_pieces, kind), kept(c_pieces, kind)
    return late_score(q_vectors[q_keep], query_weights(q_pieces, q_keep, idf), c_vectors[c_keep])


def query_weights(
    pieces: list[str], keep: np.ndarray, idf: tuple[dict[str, float], float] | None
) -> np.ndarray:
    if idf is None:
        return np.ones(int(keep.sum()))
    table, unseen = idf
    return np.array([table.get(p, unseen) for p, k in zip(pieces, keep, strict=True) if k])


def late_score(q_vectors: np.ndarray, weights: np.ndarray, c_vectors: np.ndarray) -> float:
    best = (q_vectors @ c_vectors.T).max(axis=1)
    return float((best * weights).sum() / weights.sum())


def zscore(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


_KEPT: dict[tuple[str, str, str, str], np.ndarray] = {}


def ranks(
    data: dict[str, Any], label: str, run: str, variant: tuple[str, str, str] | None
) -> list[dict[str, Any]]:
    """Per query: the candidates' ids, first-stage scores and (for a variant) MaxSim scores."""
    entry = data["sets"][label]
    out = []
    cards: dict[str, np.ndarray] = {}
    idf = None
    if variant is not None:
        field, kind, weighting = variant
        if weighting == "idf":
            idf = idf_table(entry["fields"][field])
        for sid, (pieces, vectors) in entry["fields"][field].items():
            key = (label, field, kind, sid)
            if key not in _KEPT:
                _KEPT[key] = vectors[kept(pieces, kind)]
            cards[sid] = _KEPT[key]
    for q, hits in zip(data["queries"], entry["runs"][run], strict=True):
        ids = [h["sid"] for h in hits]
        score = np.array([h["score"] for h in hits])
        late = np.zeros(len(hits))
        if variant is not None and hits:
            keep = kept(q["pieces"], variant[1])
            q_vectors, weights = q["tv"][keep], query_weights(q["pieces"], keep, idf)
            # one matmul against the 20 cards' pieces, then the best per query piece within each card
            offsets = np.cumsum([0] + [len(cards[sid]) for sid in ids[:-1]])
            best = np.maximum.reduceat(q_vectors @ np.vstack([cards[sid] for sid in ids]).T, offsets, axis=1)
            late = (weights @ best) / weights.sum()
        out.append({"target": q["target"], "fold": q["fold"], "ids": ids, "score": score, "late": late})
    return out


def recall(rows: list[dict[str, Any]], part: str, w: float | None) -> tuple[float, float]:
    """recall@1 and @3 on a fold ("" = all): w None = MaxSim alone, else score + w * z(maxsim)."""
    chosen = [r for r in rows if part in ("", r["fold"])]
    at1 = at3 = 0
    for r in chosen:
        if not r["ids"]:
            continue
        value = r["late"] if w is None else r["score"] + w * zscore(r["late"])
        order = [r["ids"][i] for i in np.argsort(-value, kind="stable")]
        at1 += order[0] == r["target"]
        at3 += r["target"] in order[:3]
    return at1 / len(chosen), at3 / len(chosen)


def latency(data: dict[str, Any]) -> None:
    """The second stage's cost per query for 20 candidates on this machine (both ways)."""
    from episodic.embed.minilm import MiniLMEmbedder

    model = MiniLMEmbedder(workers=1)
    model.load()
    label = "cards" if "cards" in data["sets"] else next(iter(data["sets"]))
    entry = data["sets"][label]
    for field in ("problem+insight", "all", UNION):
        cards = entry["fields"][field]
        texts_by_sid = entry["texts"].get(field) or {
            sid: entry["texts"]["struct"][sid] + "\n" + entry["texts"]["semantic"][sid] for sid in cards
        }
        timings, stored = [], []
        for q, hits in list(zip(data["queries"], entry["runs"]["all"], strict=True))[:40]:
            ids = [h["sid"] for h in hits]
            started = time.perf_counter()
            vectors = model.token_vectors([texts_by_sid[sid] for sid in ids])
            [maxsim((q["pieces"], q["tv"]), v, "content", None) for v in vectors]
            timings.append(time.perf_counter() - started)
            started = time.perf_counter()
            [maxsim((q["pieces"], q["tv"]), cards[sid], "content", None) for sid in ids]
            stored.append(time.perf_counter() - started)
        pieces = [len(p) for p, _ in cards.values()]
        print(
            f"latency ({label}, field {field}, {len(timings)} queries x 20 candidates): query-time card vectors "
            f"p50 {1000 * np.percentile(timings, 50):.0f} ms, p95 {1000 * np.percentile(timings, 95):.0f} ms; "
            f"stored vectors p50 {1000 * np.percentile(stored, 50):.1f} ms; pieces per card mean "
            f"{np.mean(pieces):.0f} (max {max(pieces)}): stored as float16, {np.mean(pieces) * 384 * 2 / 1024:.0f} kB "
            f"a card, {sum(pieces) * 384 * 2 / 2**20:.1f} MB for {len(pieces)} cards"
        )


def main(transcripts: Path, eval_dir: Path, reuse: Path | None) -> None:
    if reuse is not None and reuse.is_file():
        data = pickle.loads(reuse.read_bytes())
    else:
        data = collect(transcripts, eval_dir)
        if reuse is not None:
            reuse.write_bytes(pickle.dumps(data))
    for entry in data["sets"].values():
        struct, semantic = entry["fields"]["struct"], entry["fields"]["semantic"]
        entry["fields"][UNION] = {
            sid: (struct[sid][0] + semantic[sid][0], np.vstack([struct[sid][1], semantic[sid][1]]))
            for sid in struct
        }
    variants = [(f, k, wt) for f in (*FIELDS, UNION) for k in FILTERS for wt in WEIGHTINGS]
    joint: dict[tuple[str, str], dict[Any, Any]] = {}
    for label in data["sets"]:
        for run in ("all", "verified"):
            first = ranks(data, label, run, None)
            base = {p: recall(first, p, 0.0) for p in ("", "A", "B")}
            print(
                f"\n== {label}, {run} cards: first stage r@1/r@3 all {base[''][0]:.3f}/{base[''][1]:.3f}, "
                f"A {base['A'][0]:.3f}/{base['A'][1]:.3f}, B {base['B'][0]:.3f}/{base['B'][1]:.3f}"
            )
            grid = {}
            for v in variants:
                rows = ranks(data, label, run, v)
                alone = {p: recall(rows, p, None) for p in ("A", "B")}
                fused = {(p, w): recall(rows, p, float(w)) for p in ("A", "B") for w in WEIGHTS}
                grid[v] = (alone, fused)
                joint.setdefault((label, run), {}).update(
                    {(v, w): {p: fused[(p, w)] for p in "AB"} for w in WEIGHTS}
                )
                joint[(label, run)][(v, None)] = alone
                best_a = max(WEIGHTS, key=lambda w: (fused[("A", w)][0], fused[("A", w)][1], -w))
                best_b = max(WEIGHTS, key=lambda w: (fused[("B", w)][0], fused[("B", w)][1], -w))
                print(
                    f"{'/'.join(v):28s} alone A {alone['A'][0]:.3f}/{alone['A'][1]:.3f} B {alone['B'][0]:.3f}/{alone['B'][1]:.3f}"
                    f" | w by A {best_a:.2f} -> B {fused[('B', best_a)][0]:.3f}/{fused[('B', best_a)][1]:.3f}"
                    f" | w by B {best_b:.2f} -> A {fused[('A', best_b)][0]:.3f}/{fused[('A', best_b)][1]:.3f}"
                )
            # the whole choice (field, filter, weighting, w) made on one fold, read on the other
            for chooser, reader in (("A", "B"), ("B", "A")):
                options = [(v, w) for v in variants for w in WEIGHTS]
                v, w = max(options, key=lambda o: (grid[o[0]][1][(chooser, o[1])], -o[1]))
                chosen = grid[v][1]
                print(
                    f"chosen on {chooser}: {'/'.join(v)} w {w:.2f} (on {chooser} {chosen[(chooser, w)][0]:.3f}/"
                    f"{chosen[(chooser, w)][1]:.3f}) -> read on {reader}: {chosen[(reader, w)][0]:.3f}/"
                    f"{chosen[(reader, w)][1]:.3f} (first stage {base[reader][0]:.3f}/{base[reader][1]:.3f})"
                )
    # one configuration for both card sets: chosen on a fold by the summed recall@1 (then @3) of the
    # all-cards view of both sets, read on the other fold in every view
    print("\n== one configuration for both card sets (chosen on one fold, read on the other)")
    labels = list(data["sets"])
    options = list(joint[(labels[0], "all")])
    for chooser, reader in (("A", "B"), ("B", "A")):
        pick = max(
            options,
            key=lambda o: (
                sum(joint[(lb, "all")][o][chooser][0] for lb in labels),
                sum(joint[(lb, "all")][o][chooser][1] for lb in labels),
                -(o[1] if o[1] is not None else 99),
            ),
        )
        v, w = pick
        print(f"chosen on {chooser}: {'/'.join(v)} {'alone' if w is None else f'fused w {w:.2f}'}")
        for lb in labels:
            for run in ("all", "verified"):
                first = recall(ranks(data, lb, run, None), reader, 0.0)
                got = joint[(lb, run)][pick][reader]
                print(
                    f"  read on {reader}, {lb}, {run}: r@1/r@3 {got[0]:.3f}/{got[1]:.3f} "
                    f"(first stage {first[0]:.3f}/{first[1]:.3f}; r@1 {got[0] - first[0]:+.3f}, r@3 {got[1] - first[1]:+.3f})"
                )
    print(f"\nload: {os.getloadavg()}")
    latency(data)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reuse = Path(sys.argv[sys.argv.index("--reuse") + 1]) if "--reuse" in sys.argv else None
    if reuse is not None and str(reuse) in args:
        args.remove(str(reuse))
    main(
        Path(args[0]) if args else Path("../shared/transcripts"),
        Path(args[1]) if len(args) > 1 else Path("../shared/eval"),
        reuse,
    )
