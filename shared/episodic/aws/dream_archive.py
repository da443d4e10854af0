"""The dream's records in the transcripts bucket under `<prefix><tenant>/` (the `dream.archive` port on S3;
the client is given, never created)."""

from __future__ import annotations

from typing import Any

from episodic.dream.port import DreamArchive, StoredFile
from episodic.kernel.models import check_tenant


class S3Archive(DreamArchive):
    def __init__(
        self, client: Any, bucket: str, prefix: str = "dreams/", kms_key_id: str | None = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.kms_key_id = kms_key_id

    def _key(self, tenant_id: str, name: str) -> str:
        return f"{self.prefix}{check_tenant(tenant_id)}/{name}"

    def files(self, tenant_id: str) -> list[StoredFile]:
        found: list[StoredFile] = []
        folder = self._key(tenant_id, "")
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=folder):
            for obj in page.get("Contents", []):
                name = obj["Key"][len(folder) :]
                if name and "/" not in name:
                    modified = obj.get("LastModified")
                    stamp = modified.timestamp() if modified is not None else 0.0
                    found.append(StoredFile(name, int(obj.get("Size", 0)), stamp))
        return found

    def read_file(self, tenant_id: str, name: str) -> str | None:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(tenant_id, name))
        except self.client.exceptions.NoSuchKey:
            return None
        return str(body["Body"].read().decode("utf-8", errors="replace"))

    def write_file(self, tenant_id: str, name: str, text: str) -> str:
        key = self._key(tenant_id, name)
        extra: dict[str, Any] = {}
        if self.kms_key_id:
            extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id}
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=text.encode("utf-8"), ContentType="text/markdown", **extra
        )
        return f"s3://{self.bucket}/{key}"
