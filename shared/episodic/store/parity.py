"""Embedding parity checks shared by every store: one error message that names both sides and the fix."""

from __future__ import annotations

from episodic.kernel.errors import ParityError
from episodic.kernel.models import UNEMBEDDED_WHEN_UNUSED, IndexManifest, check_tenant


def describe(manifest: IndexManifest) -> str:
    renderings = ",".join(manifest.renderings)
    return (
        f"{manifest.embedder_id} ({manifest.dimension}-d, renderings {renderings}, "
        f"card schema v{manifest.card_schema_version})"
    )


def settings_for(manifest: IndexManifest) -> str:
    """The settings that make a run match this manifest."""
    embedder = manifest.embedder_id
    parts: list[str] = []
    if embedder.startswith("hashing-"):
        parts += ["EPISODIC_EMBEDDER=hashing", f"EPISODIC_HASHING_DIMENSION={manifest.dimension}"]
    elif embedder.startswith("minilm"):
        parts.append("EPISODIC_EMBEDDER=minilm")
    elif "titan" in embedder:
        parts += ["EPISODIC_EMBEDDER=titan", f"EPISODIC_TITAN_DIMENSION={manifest.dimension}"]
    parts.append(f"EPISODIC_RENDERINGS={','.join(manifest.renderings)}")
    return " ".join(parts)


def _required(manifest: IndexManifest) -> set[str]:
    return set(manifest.renderings) - UNEMBEDDED_WHEN_UNUSED


def same_index(stored: IndexManifest, requested: IndexManifest) -> bool:
    return (
        stored.embedder_id == requested.embedder_id
        and stored.dimension == requested.dimension
        and _required(stored) == _required(requested)  # order does not change the index
        and stored.card_schema_version == requested.card_schema_version
    )


def extended(stored: IndexManifest, requested: IndexManifest) -> IndexManifest | None:
    """The stored manifest with the optional renderings `requested` adds, or None when it adds none."""
    added = [r for r in requested.renderings if r in UNEMBEDDED_WHEN_UNUSED and r not in stored.renderings]
    if not added:
        return None
    return stored.model_copy(update={"renderings": [*stored.renderings, *added]})


def check_parity(stored: IndexManifest, requested: IndexManifest, index_name: str, action: str) -> None:
    """Raise ParityError naming both sides when `requested` would write or query `stored` wrongly."""
    if same_index(stored, requested):
        return
    raise ParityError(
        f"cannot {action} index {index_name}: it was built with {describe(stored)}; this run uses "
        f"{describe(requested)}. Mixing them would return noise. Either set {settings_for(stored)} "
        f"to use the index as built, or re-index with the new settings into a fresh index "
        f"(move {index_name} aside first)."
    )


def require_tenant(tenant_id: str | None) -> str:
    return check_tenant(tenant_id)
