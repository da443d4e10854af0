"""Which S3 Vectors search a deployment runs (hybrid or vector-only) and why, from the SDK and the index.

Hybrid search needs both: an SDK whose QueryVectors model has `queryTexts`/`returnScores` (botocore 1.44.8+;
an older one rejects them, and its GetIndex drops `indexMode`), and an ENHANCED index with full-text search on
the `text` key. The Lambdas log this at init and `episodic doctor --aws` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TEXT_QUERY_PARAMETERS = ("queryTexts", "returnScores")
HYBRID = "hybrid"
SEARCH_MODE_HEADER = "x-episodic-search-mode"  # on every MCP Lambda answer
SEARCH_REASON_HEADER = (
    "x-episodic-search-reason"  # why (botocore version, index mode): `doctor --aws` shows it
)
VECTOR_ONLY = "vector-only"


@dataclass(frozen=True)
class SearchMode:
    mode: str  # HYBRID or VECTOR_ONLY
    reason: str
    botocore: str

    @property
    def hybrid(self) -> bool:
        return self.mode == HYBRID

    def as_log(self) -> dict[str, str]:
        return {"search_mode": self.mode, "reason": self.reason, "botocore": self.botocore}


def botocore_version() -> str:
    try:
        import botocore
    except ImportError:
        return "absent"
    return str(getattr(botocore, "__version__", "unknown"))


def _members(client: Any, operation: str, *, output: bool = False) -> set[str] | None:
    """The parameter names the client's service model knows for `operation` (None: no model to ask)."""
    try:
        model = client.meta.service_model.operation_model(operation)
        shape = model.output_shape if output else model.input_shape
    except Exception:  # a test double without a botocore model
        return None
    if output and shape is not None and "index" in shape.members:
        shape = shape.members["index"]
    return set(shape.members) if shape is not None else set()


def missing_text_query_parameters(client: Any) -> list[str]:
    """The hybrid parameters this client's botocore cannot send (empty when it can, or cannot be asked)."""
    known = _members(client, "QueryVectors")
    return [] if known is None else [p for p in TEXT_QUERY_PARAMETERS if p not in known]


def search_mode(client: Any, index: Mapping[str, Any], text_key: str) -> SearchMode:
    """The mode for this client and this GetIndex answer."""
    version = botocore_version()
    missing = missing_text_query_parameters(client)
    if missing:
        return SearchMode(
            VECTOR_ONLY,
            f"botocore {version} lacks QueryVectors {', '.join(missing)}: bundle botocore >= 1.44.8",
            version,
        )
    index_fields = _members(client, "GetIndex", output=True)
    if index_fields is not None and "indexMode" not in index_fields:
        return SearchMode(VECTOR_ONLY, f"botocore {version} drops GetIndex indexMode", version)
    if index.get("indexMode") != "ENHANCED":
        return SearchMode(
            VECTOR_ONLY,
            f"index mode is {index.get('indexMode') or 'unreported'}, not ENHANCED (full-text search needs it)",
            version,
        )
    text_keys = {
        c.get("metadataKey")
        for c in (index.get("metadataConfiguration") or {}).get("textSearchConfigurations", []) or []
    }
    if text_key not in text_keys:
        return SearchMode(
            VECTOR_ONLY, f"no full-text search configured on metadata key {text_key!r}", version
        )
    return SearchMode(HYBRID, f"ENHANCED index, full-text search on {text_key!r}", version)


def store_search_mode(store: Any, log: Any = None) -> SearchMode | None:
    """The store's mode when it has one (S3 Vectors), logged once as `search mode`; a failing GetIndex is
    logged and answered None (the first search reports the same error to its caller)."""
    describe = getattr(store, "search_mode", None)
    if not callable(describe):
        return None
    try:
        mode: SearchMode = describe()
    except Exception as exc:
        if log is not None:
            log.warning("search mode unknown", extra={"reason": f"{type(exc).__name__}: {exc}"})
        return None
    if log is not None:
        (log.info if mode.hybrid else log.warning)("search mode", extra=mode.as_log())
    return mode
