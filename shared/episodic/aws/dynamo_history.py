"""The deployed history store: DynamoDB for per-session metadata and links, S3 for the records, and the
full-text search in the serving Lambda over a tenant's records mirrored into in-memory SQLite FTS5.

Why this shape: a record holds prompts in full (tens of KB), past DynamoDB's 400 KB item limit for long
sessions and past S3 Vectors' 40 KB metadata limit; S3 stores them for cents. The questions asked of
metadata and links are per tenant (a date range, a session, an item), which is one DynamoDB Query on
the tenant's partition, on demand, no idle cost. Full-text search needs an index; an OpenSearch Serverless
collection costs hundreds of dollars a month idle, so the warm MCP Lambda keeps each tenant's records in
the same SQLite FTS5 index the embedded store uses, brought up to date on each call from the metadata
Query (only new or changed records are read from S3).

Items: sessions `pk=<tenant>#session, sk=<session_id>` (sha, started_ts, project, record key); links
`pk=<tenant>#link, sk=<linked_at>#<n>` (the link as JSON). The tenant is in every key written or read.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from episodic.aws._calls import dynamo_pages
from episodic.history.models import HistoryFilters, HistoryRecord, SessionMatch, WorkLink
from episodic.history.port import HistoryStore
from episodic.history.sqlite_store import SQLiteHistoryStore
from episodic.store.parity import require_tenant


def _session_pk(tenant: str) -> str:
    return f"{require_tenant(tenant)}#session"


def _link_pk(tenant: str) -> str:
    return f"{require_tenant(tenant)}#link"


class DynamoS3HistoryStore(HistoryStore):
    def __init__(self, dynamodb: Any, s3: Any, *, table: str, bucket: str, prefix: str = "history/") -> None:
        self.dynamodb = dynamodb
        self.s3 = s3
        self.table = table
        self.bucket = bucket
        self.prefix = prefix
        self._mirrors: dict[str, SQLiteHistoryStore] = {}  # tenant -> its records' full-text index
        self._lock = threading.Lock()

    def _key(self, tenant: str, session_id: str) -> str:
        return f"{self.prefix}{require_tenant(tenant)}/{session_id}.json"

    def _query(self, pk: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        yield from dynamo_pages(self.dynamodb.query, **kwargs)

    # ------------------------------------------------------------------ records

    def stored_sha(self, tenant_id: str, session_id: str) -> str | None:
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key={"pk": {"S": _session_pk(tenant_id)}, "sk": {"S": session_id}},
            ProjectionExpression="sha",
        ).get("Item")
        return item["sha"]["S"] if item else None

    def put(self, record: HistoryRecord) -> bool:
        tenant = require_tenant(record.tenant_id)
        if self.stored_sha(tenant, record.session_id) == record.source_sha256:
            return False
        key = self._key(tenant, record.session_id)
        # the record first: a metadata item never names a record that is not there
        self.s3.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=record.model_dump_json().encode(),
            ContentType="application/json",
        )
        item: dict[str, Any] = {
            "pk": {"S": _session_pk(tenant)},
            "sk": {"S": record.session_id},
            "sha": {"S": record.source_sha256},
            "project": {"S": record.project},
            "record_key": {"S": key},
        }
        if record.started_at is not None:
            item["started_ts"] = {"N": str(Decimal(str(record.started_at.timestamp())))}
        self.dynamodb.put_item(TableName=self.table, Item=item)
        return True

    def _read(self, key: str) -> HistoryRecord:
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return HistoryRecord.model_validate_json(body)

    def get(self, tenant_id: str, session_id: str) -> HistoryRecord | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key={"pk": {"S": _session_pk(tenant_id)}, "sk": {"S": session_id}}
        ).get("Item")
        if not item:
            return None
        record = self._read(item["record_key"]["S"])
        return record if record.tenant_id == tenant_id else None

    def count(self, tenant_id: str) -> int:
        return sum(1 for _ in self._query(_session_pk(tenant_id)))

    def forget(self, tenant_id: str, session_id: str) -> bool:
        tenant = require_tenant(tenant_id)
        key = {"pk": {"S": _session_pk(tenant)}, "sk": {"S": session_id}}
        item = self.dynamodb.get_item(TableName=self.table, Key=key).get("Item")
        if item:
            self.s3.delete_object(Bucket=self.bucket, Key=item["record_key"]["S"])
            self.dynamodb.delete_item(TableName=self.table, Key=key)
        links = 0
        for row in list(self._query(_link_pk(tenant))):
            if WorkLink.model_validate(json.loads(row["link"]["S"])).session_id == session_id:
                self.dynamodb.delete_item(TableName=self.table, Key={"pk": row["pk"], "sk": row["sk"]})
                links += 1
        with self._lock:  # this process's mirror; another warm Lambda's drops it when it next starts
            mirror = self._mirrors.get(tenant)
        if mirror is not None:
            mirror.forget(tenant, session_id)
        return bool(item) or links > 0

    def _mirror(self, tenant: str) -> SQLiteHistoryStore:
        """The tenant's full-text mirror, brought up to date from the metadata (changed records only)."""
        with self._lock:
            mirror = self._mirrors.get(tenant)
            if mirror is None:
                mirror = self._mirrors[tenant] = SQLiteHistoryStore(":memory:")
            for item in self._query(_session_pk(tenant)):
                if mirror.stored_sha(tenant, item["sk"]["S"]) != item["sha"]["S"]:
                    record = self._read(item["record_key"]["S"])
                    if record.tenant_id == tenant:
                        mirror.put(record)
            return mirror

    def sessions(self, tenant_id: str, filters: HistoryFilters) -> list[HistoryRecord]:
        return self._mirror(require_tenant(tenant_id)).sessions(tenant_id, filters)

    def match(
        self, tenant_id: str, query: str, filters: HistoryFilters, limit: int, *, some_words: bool = False
    ) -> list[SessionMatch]:
        mirror = self._mirror(require_tenant(tenant_id))
        return mirror.match(tenant_id, query, filters, limit, some_words=some_words)

    # ------------------------------------------------------------------ links

    def add_links(self, links: Sequence[WorkLink]) -> int:
        added = 0
        for link in links:
            tenant = require_tenant(link.tenant_id)
            if link.origin == "detected" and any(
                existing.item == link.item for existing in self.links(tenant, session_id=link.session_id)
            ):
                continue
            self.dynamodb.put_item(
                TableName=self.table,
                Item={
                    "pk": {"S": _link_pk(tenant)},
                    "sk": {"S": f"{link.linked_at.isoformat()}#{uuid.uuid4().hex[:12]}"},
                    "link": {"S": link.model_dump_json()},
                },
                ConditionExpression="attribute_not_exists(pk)",  # appended, never overwritten
            )
            added += 1
        return added

    def links(
        self, tenant_id: str, *, session_id: str | None = None, item: str | None = None
    ) -> list[WorkLink]:
        found = []
        for row in self._query(_link_pk(tenant_id)):
            link = WorkLink.model_validate(json.loads(row["link"]["S"]))
            if link.tenant_id != tenant_id:
                continue
            if session_id is not None and link.session_id != session_id:
                continue
            if item is not None and link.item.lower() != item.lower():
                continue
            found.append(link)
        found.sort(key=lambda link: link.linked_at, reverse=True)
        return found
