"""The scratch memory built from the settings (the one place its backend is chosen)."""

from __future__ import annotations

import logging

from episodic.ports import Embedder
from episodic.scratch.port import ScratchStore
from episodic.scratch.service import ScratchMemory
from episodic.scrub import Scrubber
from episodic.settings import DeployedSettings, Settings

log = logging.getLogger(__name__)
SQLITE_FILE = "scratch.sqlite3"


def build_scratch(settings: Settings, embedder: Embedder) -> ScratchMemory | None:
    """None when scratch memory is off (or a Lambda has no OpenSearch collection to keep it in)."""
    if not settings.scratch_memory:
        return None
    if settings.scratch_store == "opensearch":
        from episodic.aws.opensearch_client import opensearch_client
        from episodic.aws.opensearch_scratch import OpenSearchScratchStore

        store: ScratchStore = OpenSearchScratchStore(
            opensearch_client(settings), settings.opensearch_scratch_index
        )
    elif isinstance(settings, DeployedSettings):
        return None  # a Lambda's disk is not a memory: scratch needs the OpenSearch collection there
    else:
        from episodic.private_home import secure_home
        from episodic.scratch.sqlite_store import SQLiteScratchStore

        path = settings.home / SQLITE_FILE
        secure_home(settings.home, path)
        store = SQLiteScratchStore(path)
    return ScratchMemory(settings, store, embedder, Scrubber.from_settings(settings))
