"""The evaluation corpus: every session under the given folders, parsed and distilled as `index` does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from episodic.evaluation.cache import WorkCache, code_fingerprint, combine, source_digest
from episodic.evaluation.progress import Progress
from episodic.kernel.errors import EpisodicError, InvalidArgumentError
from episodic.kernel.models import Card, DistillerInfo, NotEpisode, Trajectory
from episodic.kernel.ports import Distiller, TranscriptSource
from episodic.kernel.settings import Settings

# the code whose change must invalidate a cached parse / card
PARSER_MODULES = ("episodic.parse", "episodic.scrub", "episodic.plumbing.marker", "episodic.kernel.models")
DISTILLER_MODULES = ("episodic.distill", "episodic.sessions.survey", "episodic.kernel.models")


@dataclass
class EvalCorpus:
    """Parsed sessions by session id (discovery order); cards once `distill_corpus` ran."""

    trajectories: dict[str, Trajectory] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # session id -> parse cache key
    cards: dict[str, Card] = field(default_factory=dict)
    distiller: DistillerInfo | None = None
    # sessions whose card another distiller wrote (a cards folder's gaps, filled by the heuristic)
    card_distillers: dict[str, DistillerInfo] = field(default_factory=dict)
    not_episodes: Counter[str] = field(default_factory=Counter)  # reason -> count
    duplicates: int = 0  # session ids found in more than one file (the later file wins, as in `index`)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (file, reason): parse/distill errors
    files: int = 0
    source_bytes: int = 0

    @property
    def session_ids(self) -> list[str]:
        return list(self.trajectories)

    def summary(self) -> dict[str, object]:
        return {
            "sessions": len(self.trajectories),
            "session_files": self.files,
            "source_bytes": self.source_bytes,
            "not_episodes": sum(self.not_episodes.values()),
            "not_episode_reasons": dict(self.not_episodes),
            "duplicate_session_ids": self.duplicates,
            "cards": len(self.cards),
            "distiller": self.distiller.id if self.distiller else None,
            "failures": [{"file": f, "reason": r} for f, r in self.failures],
        }


def check_folders(transcripts: Sequence[str | Path], cards_dir: str | Path | None = None) -> None:
    """InvalidArgumentError naming the first transcripts or cards folder that is not there."""
    if not transcripts:
        raise InvalidArgumentError("give at least one transcripts folder")
    for folder in transcripts:
        if not Path(folder).exists():
            raise InvalidArgumentError(f"transcripts folder not found: {folder}")
    if cards_dir is not None and not Path(cards_dir).is_dir():
        raise InvalidArgumentError(f"cards folder not found: {cards_dir}")


def parser_fingerprint(settings: Settings) -> str:
    return code_fingerprint(PARSER_MODULES, settings.tool_output_chars, sorted(settings.scrub_patterns))


def load_corpus(
    settings: Settings,
    source: TranscriptSource,
    paths: Sequence[str],
    cache: WorkCache,
    progress: Progress | None = None,
) -> EvalCorpus:
    """Discover and parse every session under `paths`, reusing cached parses of unchanged files."""
    progress = progress or Progress()
    corpus = EvalCorpus()
    sources = list(source.discover(list(paths)))
    corpus.files = len(sources)
    fingerprint = parser_fingerprint(settings)
    progress.start("parsing sessions", len(sources))
    for src in sources:
        corpus.source_bytes += src.total_bytes
        key = combine(fingerprint, source_digest(src))
        loaded = cache.get_parse(key)
        if loaded is None:
            try:
                loaded = source.load(src)
            except Exception as exc:  # the parser promises not to raise; one file must not stop a run
                corpus.failures.append((src.main_path, f"parse error: {type(exc).__name__}: {exc}"))
                progress.advance()
                continue
            cache.put_parse(key, loaded)
        if isinstance(loaded, NotEpisode):
            corpus.not_episodes[loaded.reason] += 1
        else:
            if loaded.session_id in corpus.trajectories:
                corpus.duplicates += 1
                del corpus.trajectories[loaded.session_id]  # re-insert: the later file wins, as in `index`
            corpus.trajectories[loaded.session_id] = loaded
            corpus.keys[loaded.session_id] = key
        progress.advance()
    return corpus


def distiller_fingerprint(settings: Settings, distiller: Distiller) -> str:
    return code_fingerprint(DISTILLER_MODULES, distiller.info.id, settings.survey_token_budget)


def distill_corpus(
    corpus: EvalCorpus,
    settings: Settings,
    distiller: Distiller,
    cache: WorkCache,
    progress: Progress | None = None,
    only: set[str] | None = None,
) -> None:
    """One card per session with the configured distiller (as `index` makes it), cached by content;
    with `only`, just those sessions (e.g. the ones a cards folder lacks: an LLM distiller costs money)."""
    from episodic.sessions.survey import render_survey

    progress = progress or Progress()
    fingerprint = distiller_fingerprint(settings, distiller)
    corpus.distiller = distiller.info
    wanted = {s: t for s, t in corpus.trajectories.items() if only is None or s in only}
    progress.start(f"distilling ({distiller.info.id})", len(wanted))
    for session_id, trajectory in wanted.items():
        key = combine(fingerprint, corpus.keys[session_id])
        card = cache.get_card(key)
        if card is None:
            try:
                survey = render_survey(trajectory, settings.survey_token_budget)
                card = distiller.distill(trajectory, survey).card
            except EpisodicError as exc:  # no card: card systems miss this session, raw ones still see it
                corpus.failures.append((trajectory.source.main_path, f"distill error: {exc}"))
                progress.advance()
                continue
            cache.put_card(key, card)
        corpus.cards[session_id] = card
        progress.advance()
