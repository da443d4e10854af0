"""Where records live: `<home>/dreams/<tenant>/` locally, `dreams/<tenant>/` in the bucket on AWS.

Per week `<week>.md` (the record) and `<week>.synthesis.md` (the hand-off); `<week>.survey.md` only when
asked (the survey is regenerable). Records are dated and kept; a week is rewritten only with force.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Literal

from episodic.dream.weeks import IsoWeek
from episodic.models import check_tenant

Kind = Literal["record", "synthesis", "survey"]
_SUFFIX: dict[str, str] = {"record": ".md", "synthesis": ".synthesis.md", "survey": ".survey.md"}
_RECORD_NAME_RE = re.compile(r"^(\d{4}-W\d{2})\.md$")


def file_name(week: IsoWeek, kind: Kind) -> str:
    return f"{week}{_SUFFIX[kind]}"


class RecordArchive(ABC):
    @abstractmethod
    def weeks(self, tenant_id: str) -> list[IsoWeek]:
        """The weeks that have a record, oldest first."""

    @abstractmethod
    def read(self, tenant_id: str, week: IsoWeek, kind: Kind = "record") -> str | None: ...

    @abstractmethod
    def write(self, tenant_id: str, week: IsoWeek, kind: Kind, text: str) -> str:
        """Store the text; returns where it went (a path or an s3:// URL)."""


class LocalArchive(RecordArchive):
    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, tenant_id: str) -> Path:
        return self.root / check_tenant(tenant_id)

    def weeks(self, tenant_id: str) -> list[IsoWeek]:
        folder = self.folder(tenant_id)
        if not folder.is_dir():
            return []
        found = [m[1] for p in folder.iterdir() if (m := _RECORD_NAME_RE.match(p.name))]
        return sorted(IsoWeek.parse(w) for w in found)

    def read(self, tenant_id: str, week: IsoWeek, kind: Kind = "record") -> str | None:
        path = self.folder(tenant_id) / file_name(week, kind)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, tenant_id: str, week: IsoWeek, kind: Kind, text: str) -> str:
        folder = self.folder(tenant_id)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / file_name(week, kind)
        partial = path.with_suffix(path.suffix + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # a reader never sees half a record
        return str(path)


class S3Archive(RecordArchive):
    """Records in the transcripts bucket under `<prefix><tenant>/` (the client is given, never created)."""

    def __init__(
        self, client: Any, bucket: str, prefix: str = "dreams/", kms_key_id: str | None = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.kms_key_id = kms_key_id

    def _key(self, tenant_id: str, name: str) -> str:
        return f"{self.prefix}{check_tenant(tenant_id)}/{name}"

    def weeks(self, tenant_id: str) -> list[IsoWeek]:
        found: list[IsoWeek] = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(tenant_id, "")):
            for obj in page.get("Contents", []):
                match = _RECORD_NAME_RE.match(obj["Key"].rsplit("/", 1)[-1])
                if match:
                    found.append(IsoWeek.parse(match[1]))
        return sorted(found)

    def read(self, tenant_id: str, week: IsoWeek, kind: Kind = "record") -> str | None:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(tenant_id, file_name(week, kind)))
        except self.client.exceptions.NoSuchKey:
            return None
        return str(body["Body"].read().decode("utf-8"))

    def write(self, tenant_id: str, week: IsoWeek, kind: Kind, text: str) -> str:
        key = self._key(tenant_id, file_name(week, kind))
        extra: dict[str, Any] = {}
        if self.kms_key_id:
            extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id}
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=text.encode("utf-8"), ContentType="text/markdown", **extra
        )
        return f"s3://{self.bucket}/{key}"
