"""`UploadedSessions` over the transcripts bucket: `<prefix><tenant>/<session>.jsonl` (+ its subagent files)
as harvest uploaded it, parsed like the distill Lambda parses it (`pipeline.load_transcript`); cards archived
under `<cards_prefix><tenant>/` like the distilled ones (`card_archive`)."""

from __future__ import annotations

from typing import Any

from episodic.aws.card_archive import archive_card
from episodic.aws.pipeline import fetch_transcript, load_transcript
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import CardRecord, Trajectory
from episodic.kernel.ports import TranscriptSource, UploadedSessions


class S3UploadedSessions(UploadedSessions):
    def __init__(
        self,
        s3_client: Any,
        bucket: str,
        *,
        transcripts_prefix: str,
        cards_prefix: str,
        kms_key_id: str | None = None,
    ) -> None:
        self.s3 = s3_client
        self.bucket = bucket
        self.transcripts_prefix = transcripts_prefix
        self.cards_prefix = cards_prefix
        self.kms_key_id = kms_key_id

    def find(self, tenant_id: str, session_id: str, parse: TranscriptSource) -> Trajectory | None:
        key = f"{self.transcripts_prefix}{tenant_id}/{session_id}.jsonl"
        try:
            transcript = fetch_transcript(self.s3, self.bucket, key, prefix=self.transcripts_prefix)
        except InvalidArgumentError:  # not uploaded (or not a session key): nothing to judge against
            return None
        if transcript is None:
            return None
        loaded = load_transcript(transcript, parse)
        return loaded if isinstance(loaded, Trajectory) and loaded.session_id == session_id else None

    def archive(self, record: CardRecord) -> str:
        key = archive_card(self.s3, self.bucket, record, self.cards_prefix, kms_key_id=self.kms_key_id)
        return f"s3://{self.bucket}/{key}"
