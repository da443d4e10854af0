"""One tenant's vectors as one in-memory float32 matrix, with the per-session metadata filters need.

Rows are grouped by rendering (one contiguous block each, a row per session holding it), so a query
multiplies only the blocks of the renderings it ranks with (`per_rendering`). Built from the database on first query and whenever the tenant's write
generation moves (a write by this process or any other).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from episodic.kernel.models import Outcome, SearchFilters


def timestamp(value: datetime | None) -> float | None:
    """Seconds since the epoch; a naive datetime is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


@dataclass
class TenantMatrix:
    generation: int
    rowids: np.ndarray  # (S,) card rowids, one per session
    matrix: np.ndarray  # (R, dim) float32, unit rows, grouped by rendering
    row_session: np.ndarray  # (R,) the session index of each row
    blocks: tuple[tuple[int, int], ...]  # rows [lo, hi) of each rendering, in `renderings` order
    renderings: tuple[str, ...]
    verified: np.ndarray  # (S,) bool
    project: np.ndarray  # (S,) object (str)
    agent: np.ndarray  # (S,) object (str): the coding agent that wrote the session
    started_ts: np.ndarray  # (S,) float64, NaN when unknown
    tag_sessions: dict[str, np.ndarray]  # tag -> indices of the sessions carrying it
    index_of: dict[int, int]  # rowid -> session index

    @classmethod
    def build(
        cls,
        generation: int,
        dimension: int,
        rows: Iterable[tuple[int, str, str, float | None, str, str, bytes, str]],
    ) -> TenantMatrix:
        """rows: (rowid, outcome, project, started_ts, tags JSON, rendering, vector blob, agent), ordered
        by rowid."""
        rowids: list[int] = []
        starts: list[int] = []
        verified: list[bool] = []
        projects: list[str] = []
        agents: list[str] = []
        started: list[float] = []
        tag_lists: dict[str, list[int]] = {}
        blobs: list[bytes] = []
        rendering_ids: list[int] = []
        names: dict[str, int] = {}
        for rowid, outcome, project, started_ts, tags_json, rendering, blob, agent in rows:
            if not rowids or rowids[-1] != rowid:
                rowids.append(rowid)
                starts.append(len(blobs))
                verified.append(outcome == Outcome.VERIFIED.value)
                projects.append(project)
                agents.append(agent)
                started.append(math.nan if started_ts is None else float(started_ts))
                for tag in json.loads(tags_json):
                    tag_lists.setdefault(tag, []).append(len(rowids) - 1)
            blobs.append(blob)
            rendering_ids.append(names.setdefault(rendering, len(names)))
        matrix = (
            np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dimension)
            if blobs
            else np.zeros((0, dimension), dtype=np.float32)
        )
        # one contiguous block per rendering: a query ranking with two of three renderings reads 2/3 of it
        row_rendering = np.asarray(rendering_ids, dtype=np.int16)
        order = np.argsort(row_rendering, kind="stable")
        ends = [*starts[1:], len(blobs)] if starts else []
        sessions = np.repeat(
            np.arange(len(rowids)), [end - start for start, end in zip(starts, ends, strict=True)]
        )
        matrix = np.ascontiguousarray(matrix[order])
        row_rendering = row_rendering[order]
        bounds = np.searchsorted(row_rendering, np.arange(len(names) + 1))
        return cls(
            generation=generation,
            rowids=np.asarray(rowids, dtype=np.int64),
            matrix=matrix,
            row_session=sessions[order],
            blocks=tuple((int(bounds[i]), int(bounds[i + 1])) for i in range(len(names))),
            renderings=tuple(names),
            verified=np.asarray(verified, dtype=bool),
            project=np.asarray(projects, dtype=object),
            agent=np.asarray(agents, dtype=object),
            started_ts=np.asarray(started, dtype=np.float64),
            tag_sessions={tag: np.asarray(found, dtype=np.int64) for tag, found in tag_lists.items()},
            index_of={rowid: i for i, rowid in enumerate(rowids)},
        )

    def __len__(self) -> int:
        return len(self.rowids)

    def allowed(self, filters: SearchFilters) -> np.ndarray:
        """(S,) bool: the sessions the filters admit (same rules as the keyword half's SQL)."""
        mask = np.ones(len(self), dtype=bool) if filters.include_unverified else self.verified.copy()
        if filters.project:
            mask &= self.project == filters.project
        if filters.agent:
            mask &= self.agent == filters.agent
        if filters.since is not None:
            since = timestamp(filters.since)
            with np.errstate(invalid="ignore"):
                mask &= self.started_ts >= since  # NaN (unknown start) never passes
        wanted = normalise_tags(filters.tags)
        if wanted:
            tagged = np.zeros(len(self), dtype=bool)
            for tag in wanted:
                tagged[self.tag_sessions.get(tag, np.zeros(0, dtype=np.int64))] = True
            mask &= tagged
        return mask

    def per_rendering(self, query: np.ndarray, renderings: Sequence[str] | None = None) -> np.ndarray:
        """(len(renderings), S) cosine of each session's vector for each asked rendering (default: all);
        -inf where a session has none."""
        names = self.renderings if renderings is None else tuple(renderings)
        out = np.full((len(names), len(self)), -np.inf, dtype=np.float32)
        # a float64 query would upcast the whole block: keep the product in float32
        q = query.astype(np.float32, copy=False)
        for j, name in enumerate(names):
            if name in self.renderings:
                lo, hi = self.blocks[self.renderings.index(name)]
                out[j, self.row_session[lo:hi]] = self.matrix[lo:hi] @ q
        return out


def normalise_tags(tags: Iterable[str]) -> frozenset[str]:
    return frozenset(t.strip().lower() for t in tags if t and t.strip())
