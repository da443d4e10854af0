"""Study: the injection records on a replay of real prompts, and the steering rules measured before they are on.

Every session of the corpus, in time order, asks each of its real prompts (the hook's own filters: no slash
commands, no short prompts) of the memory as it stood before the session started: only the cards of earlier
sessions are in the index (each session's card is added after its prompts). What the hook gives goes
through the server's own `give` (never twice in a session, the steering rules by their switches), is
recorded with the prompt's time, and the session's own later turns are read by the rules (`uses`).

Passes: the search answers are the same whatever the records say, so they are taken once and the passes
(rules off, hubs on, promotion on, both) replay only the giving. Then the dev and fresh sets: each query asked
of the whole memory, the steering rules applied with the replay's records as their evidence, the hook's
figures (targets as a full card, negatives given a full card) with each rule off and on.

    python scripts/studies/study_injections_replay.py ../shared/transcripts ../shared/eval --out replay.json
    python scripts/studies/study_injections_replay.py ... --examples 50   # rows to check the rules by hand
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from study_relevance_judge import dev_card_sets

TENANT = "local"
PASSES: dict[str, dict[str, bool]] = {
    "rules off": {"injections_hubs": False, "injections_promote": False},
    "hubs on": {"injections_hubs": True, "injections_promote": False},
    "promotion on": {"injections_hubs": False, "injections_promote": True},
    "both on": {"injections_hubs": True, "injections_promote": True},
    "never-twice off": {
        "injections_hubs": False,
        "injections_promote": False,
        "injections_never_twice": False,
    },
}


@dataclass
class Asked:
    session_id: str
    at: datetime
    prompt: str
    hits: list[Any]  # the search's shown hits, before the giving


def hook_prompt(text: str) -> str | None:
    """The prompt as the hook asks it, or None where the hook skips it."""
    from episodic.hooks.payload import MAX_QUERY_CHARS, MIN_PROMPT_CHARS, MIN_PROMPT_WORDS

    prompt = text.strip()
    if prompt.startswith("/") or len(prompt) < MIN_PROMPT_CHARS or len(prompt.split()) < MIN_PROMPT_WORDS:
        return None
    return prompt[:MAX_QUERY_CHARS]


def search_shown(memory: Any, prompt: str) -> list[Any]:
    """search_traces as the hook asks it (verified only, weak ones listed)."""
    from episodic.core.confidence import shown
    from episodic.core.search import search_traces
    from episodic.kernel.models import SearchFilters

    found = search_traces(memory, TENANT, prompt, k=3, filters=SearchFilters(include_unverified=False))
    return shown(found, include_weak=True)


def replay_searches(settings: Any, corpus: Any, card_set: Any, embedder: Any, workdir: Path) -> list[Asked]:
    """Each session's prompts against the cards of the sessions before it, in time order."""
    from episodic.assembly import build_memory, sqlite_store_at
    from episodic.cards.write import store_card
    from episodic.distill.evidence import ordered_events

    store = sqlite_store_at(settings, workdir / "replay-index.sqlite3")
    off: dict[str, object | None] = dict.fromkeys(("dream", "scratch", "history", "failures", "injections"))
    memory = build_memory(settings, embedder=embedder, store=store, parts=off)
    store.ensure_manifest(memory.manifest)
    order = sorted(
        (t for t in corpus.trajectories.values() if t.started_at is not None), key=lambda t: t.started_at
    )
    asked: list[Asked] = []
    for n, trajectory in enumerate(order):
        for event in ordered_events(trajectory):
            prompt = hook_prompt(event.text) if event.kind == "prompt" else None
            if prompt is None or event.timestamp is None or store.count(TENANT) == 0:
                continue
            asked.append(Asked(trajectory.session_id, event.timestamp, prompt, search_shown(memory, prompt)))
        card = card_set.cards.get(trajectory.session_id)
        if card is not None:
            distiller = card_set.distillers.get(trajectory.session_id, card_set.distiller)
            store_card(
                memory,
                TENANT,
                card,
                session_id=trajectory.session_id,
                distiller=distiller,
                trajectory=trajectory,
            )
        print(f"  {n + 1}/{len(order)} sessions, {len(asked)} prompts asked", file=sys.stderr, flush=True)
    return asked


def give_pass(
    settings: Any, corpus: Any, card_set: Any, asked: list[Asked], switches: dict[str, bool], workdir: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """One pass of giving and reading over the cached searches: (its injection store, per-prompt rows)."""
    from episodic.core.injected import Receiver, give
    from episodic.injections.sqlite_store import SQLiteInjectionStore
    from episodic.injections.uses import common_evidence, read_session
    from episodic.kernel.memory import Memory

    store = SQLiteInjectionStore(workdir / f"injections-{len(list(workdir.iterdir()))}.sqlite3")
    memory = Memory(
        settings=settings.model_copy(update=switches),
        source=None,  # type: ignore[arg-type]
        distiller=None,  # type: ignore[arg-type]
        embedder=None,  # type: ignore[arg-type]
        store=None,  # type: ignore[arg-type]
        parts={"injections": store},
    )
    rows = []
    by_session: dict[str, list[Asked]] = {}
    for a in asked:
        by_session.setdefault(a.session_id, []).append(a)
    order = sorted((t for t in corpus.trajectories.values() if t.started_at), key=lambda t: t.started_at)
    indexed: list[Any] = []  # the cards of the sessions before this one: the tenant's common evidence
    for trajectory in order:
        session_id = trajectory.session_id
        for a in by_session.get(session_id, []):
            receiver = Receiver(TENANT, session_id, trajectory.agent, "prompt_hook", a.prompt, a.at)
            chosen = give(memory, receiver, a.hits)
            rows.append(
                {"session": session_id, "given": [(h.record.session_id, str(h.confidence)) for h in chosen]}
            )
        if session_id in by_session:
            common = common_evidence(indexed)
            uses = read_session(
                store.of_session(TENANT, session_id), trajectory, card_set.cards.get, common=common
            )
            store.set_uses(TENANT, session_id, uses)
        if session_id in card_set.cards:
            indexed.append(card_set.cards[session_id])
    return store, rows


def pass_figures(store: Any, rows: list[dict[str, Any]], corpus: Any) -> dict[str, Any]:
    from episodic.injections.summary import percentile, summarise

    records = store.since(TENANT)
    summary = summarise(records, days=0)
    per_session = Counter(r.session_id for r in records)
    all_sessions = [per_session.get(sid, 0) for sid in corpus.trajectories]
    prompts = len(rows)
    cards = sum(1 for r in rows for _, tier in r["given"] if tier == "strong")
    pointers = sum(1 for r in rows for _, tier in r["given"] if tier != "strong")
    twice = sum(
        n - 1
        for n in Counter((r.session_id, r.card_id) for r in records if r.tier == "card").values()
        if n > 1
    )
    top_share = max(Counter(c for r in rows for c, _ in r["given"]).values(), default=0) / max(prompts, 1)
    return {
        "prompts": prompts,
        "full_cards_per_prompt": round(cards / max(prompts, 1), 4),
        "pointers_per_prompt": round(pointers / max(prompts, 1), 4),
        "same_card_twice_in_a_session": twice,
        "most_given_card_share_of_prompts": round(top_share, 4),
        "injections_per_session_given_any": {
            "median": statistics.median(per_session.values()) if per_session else 0,
            "p95": percentile(list(per_session.values()), 0.95),
            "sessions": len(per_session),
        },
        "injections_per_session_all": {
            "median": statistics.median(all_sessions) if all_sessions else 0,
            "p95": percentile(all_sessions, 0.95),
            "sessions": len(all_sessions),
        },
        "read": summary.read,
        "share_used": summary.share_used,
        "by_use": summary.by_use,
        "share_by_rule": summary.share_by_rule,
        "top_cards": [row.model_dump() for row in summary.top_cards],
        "chars_per_prompt": round(sum(r.chars for r in records) / max(prompts, 1), 1),
    }


def eval_sets(eval_dir: Path) -> dict[str, list[tuple[str | None, str]]]:
    from episodic.evaluation.injection import read_negatives
    from episodic.evaluation.queries import read_queries

    out: dict[str, list[tuple[str | None, str]]] = {}
    for name in ("dev", "fresh"):
        out[f"{name} positives"] = [
            (q.session_id, q.query) for q in read_queries(eval_dir / f"{name}-queries.jsonl")
        ]
        out[f"{name} negatives"] = [
            (None, n.query) for n in read_negatives(eval_dir / f"{name}-negatives.jsonl")
        ]
    return out


def steered_eval(
    memory: Any, settings: Any, evidence: Any, sets: dict[str, list[tuple[str | None, str]]]
) -> dict[str, Any]:
    """The hook's figures on the eval sets with each steering rule, its evidence the replay's records."""
    from episodic.core.injected import choose, steer
    from episodic.kernel.models import Confidence

    answers = {
        name: [(target, search_shown(memory, text)) for target, text in items] for name, items in sets.items()
    }
    figures: dict[str, Any] = {}
    for label, switches in PASSES.items():
        if "injections_never_twice" in switches:
            continue  # one query each: nothing to give twice
        configured = settings.model_copy(update=switches)
        row: dict[str, Any] = {}
        for name, answered in answers.items():
            carded = surfaced = 0
            for target, hits in answered:
                uses = evidence.uses_of_cards(TENANT, [h.record.session_id for h in hits])
                chosen = choose(steer(hits, uses, configured), {}, never_twice=True)
                cards = [h.record.session_id for h in chosen if h.confidence == Confidence.STRONG]
                if target is None:
                    carded += bool(cards)
                    surfaced += bool(chosen)
                else:
                    carded += target in cards
                    surfaced += target in [h.record.session_id for h in chosen]
            n = max(len(answered), 1)
            kind = "negatives given a full card" if name.endswith("negatives") else "targets as a full card"
            row[f"{name}: {kind}"] = round(carded / n, 4)
            row[f"{name}: n"] = len(answered)
        figures[label] = row
    return figures


def examples(
    store: Any, corpus: Any, cards: dict[str, Any], count: int, seed: int = 61
) -> list[dict[str, Any]]:
    """Rows to check by hand: per use, up to `count` records with what the rule matched and the reply read."""
    from episodic.distill.evidence import ordered_events
    from episodic.injections.uses import moment_of, window_end

    rng = random.Random(seed)
    records = [r for r in store.since(TENANT) if r.use is not None]
    out = []
    for use in ("opened", "cited", "acted", "ignored"):
        chosen = [r for r in records if r.use == use]
        rng.shuffle(chosen)
        for r in chosen[:count]:
            events = ordered_events(corpus.trajectories[r.session_id])
            moment = moment_of(events, r) or 0
            window = events[moment : window_end(events, moment)]
            card = cards.get(r.card_id)
            out.append(
                {
                    "use": use,
                    "detail": r.use_detail,
                    "tier": r.tier,
                    "session": r.session_id,
                    "card": r.card_id,
                    "card_problem": card.problem[:300] if card else "",
                    "card_insight": card.insight[:300] if card else "",
                    "prompt": events[moment].text[:400],
                    "reply": " | ".join(e.text[:300] for e in window if e.kind == "assistant")[:1500],
                    "tools": [
                        (e.tool.name, (e.tool.command or e.tool.file_path or "")[:120])
                        for e in window
                        if e.tool
                    ][:20],
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("transcripts", type=Path)
    parser.add_argument("eval_dir", type=Path)
    parser.add_argument(
        "--cards", choices=["llm", "offline"], default="llm", help="Which card set to replay."
    )
    parser.add_argument("--out", type=Path, default=None, help="Write the figures as JSON here.")
    parser.add_argument(
        "--examples", type=int, default=0, help="Write this many rows per use to check by hand."
    )
    args = parser.parse_args()

    settings, corpus, _distiller, sets, embedder = dev_card_sets(args.transcripts, args.eval_dir)
    settings = settings.model_copy(update={"rerank_seconds": 0.0})
    card_set = sets[1] if args.cards == "llm" else sets[0]
    report: dict[str, Any] = {"cards": card_set.label, "sessions": len(corpus.trajectories)}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "passes").mkdir()
        asked = replay_searches(settings, corpus, card_set, embedder, workdir)
        stores = {}
        report["replay"] = {}
        for label, switches in PASSES.items():
            store, rows = give_pass(settings, corpus, card_set, asked, switches, workdir / "passes")
            stores[label] = store
            report["replay"][label] = pass_figures(store, rows, corpus)
            print(
                f"{label}: {json.dumps({k: v for k, v in report['replay'][label].items() if k != 'top_cards'})}"
            )
        from dataclasses import replace

        from study_relevance_judge import set_memory

        # the production read path (the eval's index ranks every session; the hook asks k 3 over the floor)
        memory = replace(
            set_memory(settings, corpus, _distiller, embedder, card_set, workdir), settings=settings
        )
        report["eval"] = steered_eval(memory, settings, stores["rules off"], eval_sets(args.eval_dir))
        for label, row in report["eval"].items():
            print(f"eval, {label}: {json.dumps(row)}")
        if args.examples:
            report["examples"] = examples(stores["rules off"], corpus, card_set.cards, args.examples)
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
