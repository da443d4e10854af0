"""The registered features, and the parts the assembly builds for those whose part depends on local or AWS.

Adding a feature: its package with a `feature.py` (`episodic.kernel.feature_contract.Feature`), and one line in
FEATURE_PACKAGES.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from episodic.aws.clients import AwsClients
from episodic.kernel.errors import ConfigError
from episodic.kernel.feature_contract import Feature
from episodic.kernel.settings import DeployedSettings, Settings

if TYPE_CHECKING:
    from episodic.dream.port import DreamArchive
    from episodic.failures.service import FailureMemory
    from episodic.history.port import HistoryStore
    from episodic.kernel.injection_port import InjectionStore
    from episodic.kernel.memory import Memory
    from episodic.scratch.service import ScratchMemory

# registration order: the order of their MCP tools after the core's, and of their observers on the write path
FEATURE_PACKAGES = (
    "episodic.dream",
    "episodic.scratch",
    "episodic.history",
    "episodic.experiment",
    "episodic.failures",
    "episodic.injections",
)
FEATURES: tuple[Feature, ...] = tuple(
    importlib.import_module(f"{package}.feature").FEATURE for package in FEATURE_PACKAGES
)


def scratch_part(settings: Settings, memory: Memory, clients: AwsClients) -> ScratchMemory | None:
    """None when scratch memory is off (or a Lambda has no OpenSearch collection to keep it in)."""
    from episodic.scratch.port import ScratchStore
    from episodic.scratch.service import ScratchMemory
    from episodic.scrub import Scrubber

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
        from episodic.plumbing.private_home import secure_home
        from episodic.scratch.sqlite_store import SCRATCH_FILE, SQLiteScratchStore

        path = settings.home / SCRATCH_FILE
        secure_home(settings.home, path)
        store = SQLiteScratchStore(path)
    return ScratchMemory(settings, store, memory.embedder, Scrubber.from_settings(settings))


def build_history(settings: Settings, clients: AwsClients | None = None) -> HistoryStore | None:
    """DynamoDB + S3 in the AWS deployment (when the stack names its table), a SQLite file beside the index
    locally; None when history is switched off (dream reads a week through it without a whole memory)."""
    if not settings.history_enabled:
        return None
    if isinstance(settings, DeployedSettings) or settings.store == "s3vectors":
        if not settings.history_table or not settings.transcripts_bucket:
            return None  # a deployment without the history table keeps cards only
        from episodic.aws.dynamo_history import DynamoS3HistoryStore

        clients = clients or AwsClients(settings)
        return DynamoS3HistoryStore(
            clients.get("dynamodb"),
            clients.get("s3"),
            table=settings.history_table,
            bucket=settings.transcripts_bucket,
            prefix=settings.history_prefix,
        )
    from episodic.history.sqlite_store import HISTORY_FILE, SQLiteHistoryStore
    from episodic.plumbing.private_home import secure_home

    path = settings.home / HISTORY_FILE
    secure_home(settings.home, path)  # prompts in full: 700 / 600 like the card index, before SQLite opens it
    return SQLiteHistoryStore(path)


def dream_archive(settings: Settings, clients: AwsClients) -> DreamArchive:
    """The dream's records: in the transcripts bucket for the deployed settings or the deployed store,
    beside the index (`<home>/dreams/<tenant>/`) locally."""
    if isinstance(settings, DeployedSettings) or (
        settings.store == "s3vectors" and settings.transcripts_bucket
    ):
        from episodic.aws.dream_archive import S3Archive

        if not settings.transcripts_bucket:
            raise ConfigError("EPISODIC_TRANSCRIPTS_BUCKET is required for records in the bucket")
        return S3Archive(
            clients.get("s3"), settings.transcripts_bucket, settings.dreams_prefix, settings.kms_key_id
        )
    from episodic.dream.archive import local_archive

    return local_archive(settings.home)


def failures_part(settings: Settings, memory: Memory, clients: AwsClients) -> FailureMemory | None:
    """A SQLite file beside the index locally; None when switched off, and in the AWS deployment (no
    adapter there yet: the failure hook asks the local server)."""
    if not settings.failure_memory or isinstance(settings, DeployedSettings) or settings.store != "sqlite":
        return None
    from episodic.failures.service import FailureMemory
    from episodic.failures.sqlite_store import FAILURES_FILE, SQLiteFailureStore
    from episodic.plumbing.private_home import secure_home
    from episodic.scrub import Scrubber

    path = settings.home / FAILURES_FILE
    secure_home(settings.home, path)
    return FailureMemory(settings, SQLiteFailureStore(path), Scrubber.from_settings(settings))


def build_injections(settings: Settings, clients: AwsClients | None = None) -> InjectionStore | None:
    """A DynamoDB table beside the cards in the AWS deployment (when the stack names one), a SQLite file
    beside the index locally; None when switched off."""
    if not settings.injections_enabled:
        return None
    if isinstance(settings, DeployedSettings) or settings.store == "s3vectors":
        if not settings.injections_table:
            return None  # a deployment without the table records nothing
        from episodic.aws.dynamo_injections import DynamoInjectionStore

        return DynamoInjectionStore(
            (clients or AwsClients(settings)).get("dynamodb"), settings.injections_table
        )
    from episodic.injections.sqlite_store import INJECTIONS_FILE, SQLiteInjectionStore
    from episodic.plumbing.private_home import secure_home

    path = settings.home / INJECTIONS_FILE
    secure_home(settings.home, path)
    return SQLiteInjectionStore(path)


# features whose part is a local or an AWS adapter: built here, never inside the feature
ADAPTED_PARTS: dict[str, Callable[[Settings, Memory, AwsClients], object | None]] = {
    "dream": lambda settings, _memory, clients: dream_archive(settings, clients),
    "history": lambda settings, _memory, clients: build_history(settings, clients),
    "scratch": scratch_part,
    "failures": failures_part,
    "injections": lambda settings, _memory, clients: build_injections(settings, clients),
}


def build_parts(
    memory: Memory, clients: AwsClients, given: dict[str, object | None] | None = None
) -> dict[str, object | None]:
    """Every registered feature's part, in registration order (`given`: handed in instead, e.g. by tests)."""
    given = given or {}
    parts: dict[str, object | None] = {}
    for feature in memory.features:
        if feature.name in given:
            parts[feature.name] = given[feature.name]
        elif feature.name in ADAPTED_PARTS:
            parts[feature.name] = ADAPTED_PARTS[feature.name](memory.settings, memory, clients)
        elif feature.build is not None:
            parts[feature.name] = feature.build(memory)
    return parts
