"""Which history store a memory gets, from the settings (called by `episodic.backends.build_history`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episodic.history.port import HistoryStore
from episodic.settings import DeployedSettings, Settings

if TYPE_CHECKING:
    from episodic.aws.clients import AwsClients

HISTORY_FILE = "history.sqlite3"


def history_store_for(settings: Settings, clients: AwsClients) -> HistoryStore | None:
    if not settings.history_enabled:
        return None
    if isinstance(settings, DeployedSettings) or settings.store == "s3vectors":
        if not settings.history_table or not settings.transcripts_bucket:
            return None  # a deployment without the history table keeps cards only
        from episodic.history.aws_store import DynamoS3HistoryStore

        return DynamoS3HistoryStore(
            clients.get("dynamodb"),
            clients.get("s3"),
            table=settings.history_table,
            bucket=settings.transcripts_bucket,
            prefix=settings.history_prefix,
        )
    from episodic.history.sqlite_store import SQLiteHistoryStore
    from episodic.private_home import secure_home

    path = settings.home / HISTORY_FILE
    secure_home(settings.home, path)  # prompts in full: 700 / 600 like the card index, before SQLite opens it
    return SQLiteHistoryStore(path)
