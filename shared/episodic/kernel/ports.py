"""Ports: the small abstract classes the core talks to. Adapters take their clients as arguments."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from episodic.kernel.models import (
    Card,
    CardRecord,
    DistillerInfo,
    DistillUsage,
    IndexManifest,
    NotEpisode,
    SearchFilters,
    SearchHit,
    SessionSource,
    Trajectory,
)

if TYPE_CHECKING:  # only in annotations: a command that never touches a vector never loads numpy
    import numpy as np


class TranscriptSource(ABC):
    """Finds sessions and turns them into scrubbed trajectories."""

    @abstractmethod
    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        """Every session under the given paths (or the default roots), subagents grouped with parents."""

    @abstractmethod
    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        """Parse one session; never raises on bad input (counts it in the stats instead)."""

    def admit(self, loaded: Trajectory) -> Trajectory | NotEpisode:
        """A session read from elsewhere (its kept trajectory), through the rules `load` applies."""
        return loaded


@dataclass
class DistillResult:
    card: Card
    usage: DistillUsage = field(default_factory=DistillUsage)
    notes: list[str] = field(
        default_factory=list
    )  # e.g. "outcome downgraded: no passing check after last edit"


class Distiller(ABC):
    """Turns a trajectory (and its budgeted survey) into a card."""

    info: DistillerInfo
    concurrency: int = 1  # sessions `index_sessions` distills in parallel (e.g. CLI subprocesses)
    uses_survey: bool = True  # False: the distiller reads the trajectory itself, so no survey is rendered

    @abstractmethod
    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        """Raise DistillError (or RetryableDistillError) when no valid card can be produced."""


class Embedder(ABC):
    """Text to unit-length float32 vectors of a fixed dimension."""

    id: str
    dimension: int
    # cosine below which a match is "not similar enough" (calibrated per embedder; a setting overrides it)
    default_min_similarity: float = 0.3

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimension), float32, each row L2-normalised."""


class Reranker(ABC):
    """The second stage: reads the query with each of the first stage's best candidates and reorders them.

    It returns the same hits, best first, each with a `score` on the first stage's scale (the confidence tiers,
    episodic.core.confidence, read it): an adapter that judges on another scale maps its judgement onto that one."""

    name: str
    depth: int  # how many of the first stage's candidates it reads

    @abstractmethod
    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """`hits` (the first stage's, best first, query already scrubbed) reordered; none added or dropped."""

    def cancel(self) -> None:  # noqa: B027 - optional: most second stages cannot stop a call under way
        """Stop the work of a `rerank` whose caller gave up on it (its deadline passed); may do nothing."""

    def warm(self) -> None:  # noqa: B027 - optional: a remote second stage has nothing to load
        """Load now what the first `rerank` would load, so the first search fits its deadline; may do nothing."""


@dataclass
class StoredVector:
    rendering: str
    text: str
    vector: np.ndarray


class VectorStore(ABC):
    """Cards and their per-rendering vectors. Every call is tenant-scoped; parity is checked on use."""

    @abstractmethod
    def ensure_manifest(self, manifest: IndexManifest) -> IndexManifest:
        """Record the manifest on first use; raise ParityError naming both sides on any mismatch; return
        the index's manifest (an older index gains the optional renderings `manifest` adds, if it can)."""

    @abstractmethod
    def manifest(self) -> IndexManifest | None: ...

    @abstractmethod
    def upsert(self, record: CardRecord, vectors: Sequence[StoredVector], manifest: IndexManifest) -> None:
        """Replace the session's card and vectors (one session, one card)."""

    @abstractmethod
    def get(self, tenant_id: str, session_id: str) -> CardRecord | None: ...

    @abstractmethod
    def delete(self, tenant_id: str, session_id: str) -> bool: ...

    @abstractmethod
    def query(
        self,
        tenant_id: str,
        query_vector: np.ndarray,
        query_text: str,
        k: int,
        filters: SearchFilters,
        manifest: IndexManifest,
        min_similarity: float,
    ) -> list[SearchHit]:
        """Hybrid (vector + keyword, fused) when the backend supports it; weak matches dropped."""

    @abstractmethod
    def iter_records(self, tenant_id: str | None = None) -> Iterable[CardRecord]:
        """All records (of one tenant, or all when None — for stats and re-indexing only)."""

    def session_ids_starting(self, tenant_id: str, prefix: str, limit: int = 10) -> list[str]:
        """The tenant's session ids that start with `prefix` (at most `limit`, sorted); a store may do better."""
        found = sorted(r.session_id for r in self.iter_records(tenant_id) if r.session_id.startswith(prefix))
        return found[:limit]

    def count(self, tenant_id: str | None = None) -> int:
        return sum(1 for _ in self.iter_records(tenant_id))


@dataclass
class IngestFailure:
    tenant_id: str
    session_key: str
    path: str
    source_sha256: str
    reason: str
    attempts: int = 1
    last_attempt_at: str = ""


class IngestLedger(ABC):
    """Sessions that could not be distilled, with the reason; retried on the next run, never lost."""

    @abstractmethod
    def record_failure(self, failure: IngestFailure) -> None: ...

    @abstractmethod
    def clear_failure(self, tenant_id: str, session_key: str) -> None: ...

    @abstractmethod
    def failures(self, tenant_id: str | None = None) -> list[IngestFailure]: ...


class ReviewableStore(ABC):
    """A store that keeps review state (episodic.cards.review): a record rewritten without new vectors."""

    @abstractmethod
    def rewrite_record(self, record: CardRecord) -> None:
        """Replace the stored record of `record`'s session (e.g. its review), keeping its vectors; a vetoed
        record stays stored (so `index` does not re-create it) but leaves every query pool."""


class UploadedSessions(ABC):
    """A tenant's uploaded session transcripts, by session id (the deployed memory's bucket): what an
    agent-written card's outcome is judged against, and where the card is archived beside them."""

    @abstractmethod
    def find(self, tenant_id: str, session_id: str, parse: TranscriptSource) -> Trajectory | None:
        """The session's scrubbed trajectory, parsed with `parse`'s rules; None when it was not uploaded."""

    @abstractmethod
    def archive(self, record: CardRecord) -> str:
        """Keep the card beside the transcripts; returns where."""


class KeptTrajectories(ABC):
    """Each indexed session's scrubbed trajectory, kept per tenant after the agent deletes its transcript
    (Claude Code's `cleanupPeriodDays`): what a re-distil, the survey and the viewer fall back to."""

    @abstractmethod
    def keep(self, tenant_id: str, trajectory: Trajectory) -> bool:
        """Keep (or replace, when the session grew) the session's trajectory; True when it was written."""

    @abstractmethod
    def get(self, tenant_id: str, session_id: str) -> Trajectory | None:
        """The kept trajectory of one of the tenant's sessions; None when none is kept."""

    @abstractmethod
    def has(self, tenant_id: str, session_id: str) -> bool:
        """Whether the session's trajectory is kept (without reading it)."""

    @abstractmethod
    def delete(self, tenant_id: str, session_id: str) -> bool:
        """Forget the session's kept trajectory; True when one was there."""

    @abstractmethod
    def usage(self, tenant_id: str) -> tuple[int, int]:
        """(sessions kept, bytes they take) for the tenant."""

    @abstractmethod
    def evict(self, tenant_id: str) -> int:
        """Hold the tenant's kept trajectories under the size cap, the oldest sessions first; how many went."""
