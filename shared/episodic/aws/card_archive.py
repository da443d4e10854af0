"""Cards archived as JSON beside the transcripts: `<prefix><tenant>/<session>.json` in the same bucket,
for human review and for re-indexing into a new index without distilling again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from episodic.kernel.errors import InvalidArgumentError, InvalidCardError
from episodic.kernel.models import CardRecord


def card_key(tenant_id: str, session_id: str, prefix: str = "cards/") -> str:
    for name, value in (("tenant", tenant_id), ("session id", session_id)):
        if not value or "/" in value or value in (".", ".."):
            raise InvalidArgumentError(f"{name} {value!r} cannot name an archive object")
    return f"{prefix}{tenant_id}/{session_id}.json"


def archive_card(
    s3_client: Any, bucket: str, record: CardRecord, prefix: str = "cards/", *, kms_key_id: str | None = None
) -> str:
    """Write (or replace) the session's card JSON; SSE-KMS with the given key. Returns the object key."""
    key = card_key(record.tenant_id, record.session_id, prefix)
    extra: dict[str, Any] = {}
    if kms_key_id:
        extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key_id, "BucketKeyEnabled": True}
    s3_client.put_object(
        Bucket=bucket,
        Key=key,
        Body=record.model_dump_json(indent=2).encode("utf-8"),
        ContentType="application/json",
        Metadata={"tenant": record.tenant_id, "source-sha256": record.source_sha256},
        **extra,
    )
    return key


def load_archived_cards(
    s3_client: Any,
    bucket: str,
    prefix: str = "cards/",
    *,
    tenant_id: str | None = None,
    errors: list[str] | None = None,
) -> Iterator[CardRecord]:
    """Every archived record (of one tenant, or all). An unreadable object raises InvalidCardError, or is
    reported in `errors` (key: reason) and skipped when a list is given."""
    scope = f"{prefix}{tenant_id}/" if tenant_id else prefix
    paginator = s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=scope):
        for item in page.get("Contents", []) or []:
            key = item["Key"]
            if not key.endswith(".json"):
                continue
            body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
            try:
                record = CardRecord.model_validate_json(body)
            except ValidationError as exc:
                reason = f"{key}: not a card record ({exc.error_count()} errors: {exc.errors()[0]['msg']})"
                if errors is None:
                    raise InvalidCardError(reason) from None
                errors.append(reason)
                continue
            if tenant_id and record.tenant_id != tenant_id:
                reason = f"{key}: record says tenant {record.tenant_id!r}, archived under {tenant_id!r}"
                if errors is None:
                    raise InvalidCardError(reason)
                errors.append(reason)
                continue
            yield record
