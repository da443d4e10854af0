"""What a replay runs on: the corpus parsed and distilled as `episodic eval` does, its card sets, and for each
an empty scratch memory with the production read path (the first stage alone beside the configured one)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from episodic.evaluation.cache import WorkCache
from episodic.evaluation.cardsets import CardSet, distilled_set, folder_set, read_folder
from episodic.evaluation.corpus import EvalCorpus, check_folders, distill_corpus, load_corpus
from episodic.evaluation.progress import Progress
from episodic.evaluation.systems.base import SystemContext
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.injection_port import INJECTIONS
from episodic.kernel.models import OPENING

FIRST_STAGE = "first stage"
SHIPPED = "shipped"


def first_stage_of(memory: Any) -> Any:
    """The same memory (the same store) without its second stage."""
    return replace(memory, reranker=None)


def scratch_injections(settings: Any, folder: Path) -> Any:
    """The records of what the replay gave, in its scratch folder: the server decides from them (never the same
    card twice in a session) and the user's own records are never touched. None when the feature is off."""
    from episodic.injections.sqlite_store import INJECTIONS_FILE, SQLiteInjectionStore

    return SQLiteInjectionStore(folder / INJECTIONS_FILE) if settings.injections_enabled else None


@dataclass
class ReplayCorpus:
    settings: Any
    corpus: EvalCorpus
    card_sets: list[CardSet]
    embedder: Any
    distiller: Any
    progress: Progress
    _workdir: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="episodic-replay-")
    )

    @classmethod
    def load(
        cls,
        settings: Any,
        transcripts: Sequence[str | Path],
        cards_dir: Path | str | None,
        progress: Progress,
        embedder: Any = None,
        distiller: Any = None,
    ) -> ReplayCorpus:
        from episodic.assembly import build_distiller, build_source
        from episodic.evaluation.runner import default_embedder

        check_folders(transcripts, cards_dir)
        # the decision path is measured, not the deadline: the second stage is waited for, as in `episodic eval`
        settings = settings.model_copy(update={"rerank_seconds": 0.0})
        cache = WorkCache(settings.cache_dir / "eval")
        corpus = load_corpus(settings, build_source(settings), [str(p) for p in transcripts], cache, progress)
        if not corpus.trajectories:
            raise InvalidArgumentError(f"no sessions found under {', '.join(map(str, transcripts))}")
        distiller = distiller or build_distiller(settings)
        distill_corpus(corpus, settings, distiller, cache, progress)
        sets = [distilled_set(corpus)]
        if cards_dir is not None:
            sets.append(folder_set(corpus, Path(cards_dir), read_folder(corpus, Path(cards_dir), settings)))
        embedder = embedder or default_embedder(settings)
        return cls(settings, corpus, sets, embedder, distiller, progress)

    def memories(self, card_set: CardSet) -> tuple[Any, dict[str, Any]]:
        """An empty memory for `card_set` (its cards' vectors embedded ahead, in bulk) and the stages to ask:
        the first stage alone and, when a second stage is configured, the memory as it ships."""
        from episodic.assembly import build_memory, sqlite_store_at
        from episodic.evaluation.systems.cards import card_vectors

        folder = Path(self._workdir.name) / card_set.label
        folder.mkdir(parents=True, exist_ok=True)
        store = sqlite_store_at(self.settings, folder / "replay.sqlite3")
        memory = build_memory(
            self.settings,
            embedder=self.embedder,
            distiller=self.distiller,
            store=store,
            parts={INJECTIONS: scratch_injections(self.settings, folder)},
        )
        context = SystemContext(self.settings, self.embedder, self.distiller, folder, self.progress)
        view = replace(self.corpus, cards=card_set.cards)
        for rendering in self.settings.renderings:  # cached by content: store_card then reads them back
            if rendering != OPENING:
                card_vectors(context, view, rendering)
        stages = {FIRST_STAGE: first_stage_of(memory)}
        if memory.reranker is not None:
            stages[SHIPPED] = memory
        return memory, stages

    def close(self) -> None:
        self._workdir.cleanup()
