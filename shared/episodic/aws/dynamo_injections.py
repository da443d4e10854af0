"""The deployed injection store: one DynamoDB table beside the cards, on demand.

Items: `pk=<tenant>#injection, sk=<time>#<record id>`, the record as JSON, its receiving session and card as
attributes and `expires_at` (epoch seconds) for the table's TTL. One tenant's records are one partition, in
time order: the summary reads a range of it, a session's records are the partition filtered by session (a
tenant's records are bounded by `injections_keep_per_tenant`). The tenant is in every key written or read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from episodic.aws._calls import dynamo_pages
from episodic.kernel.injection_port import InjectionRecord, InjectionStore, Use
from episodic.kernel.models import check_tenant

BATCH = 25  # BatchWriteItem's limit
TTL_DAYS = 400  # the table's own expiry, past any retention a setting allows to be read


def _pk(tenant: str) -> str:
    return f"{check_tenant(tenant)}#injection"


def _sk(record: InjectionRecord) -> str:
    return f"{record.at.astimezone(UTC).isoformat()}#{record.record_id}"


class DynamoInjectionStore(InjectionStore):
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table

    def _query(self, tenant: str, **extra: Any) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": _pk(tenant)}},
        }
        for key, value in extra.items():
            if key == "ExpressionAttributeValues":
                kwargs[key] = {**kwargs[key], **value}
            else:
                kwargs[key] = value
        return dynamo_pages(self.dynamodb.query, **kwargs)

    @staticmethod
    def _record(item: Mapping[str, Any]) -> InjectionRecord:
        return InjectionRecord.model_validate(json.loads(item["body"]["S"]))

    def _item(self, record: InjectionRecord) -> dict[str, Any]:
        expires = int((record.at + timedelta(days=TTL_DAYS)).timestamp())
        return {
            "pk": {"S": _pk(record.tenant_id)},
            "sk": {"S": _sk(record)},
            "session_id": {"S": record.session_id},
            "card_id": {"S": record.card_id},
            "body": {"S": record.model_dump_json()},
            "expires_at": {"N": str(expires)},
        }

    def _write(self, requests: Sequence[dict[str, Any]]) -> None:
        for start in range(0, len(requests), BATCH):
            pending: dict[str, Any] = {self.table: list(requests[start : start + BATCH])}
            while pending:
                answer = self.dynamodb.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}

    def _add(self, tenant_id: str, records: Sequence[InjectionRecord]) -> int:
        self._write([{"PutRequest": {"Item": self._item(r)}} for r in records])
        return len(records)

    def _of_session(self, tenant_id: str, session_id: str) -> list[InjectionRecord]:
        items = self._query(
            tenant_id,
            FilterExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
        )
        return [self._record(i) for i in items]

    def _since(self, tenant_id: str, since: datetime | None, limit: int) -> list[InjectionRecord]:
        extra: dict[str, Any] = {"ScanIndexForward": False}
        if since is not None:
            extra["KeyConditionExpression"] = "pk = :pk AND sk >= :since"
            extra["ExpressionAttributeValues"] = {":since": {"S": since.astimezone(UTC).isoformat()}}
        found = []
        for item in self._query(tenant_id, **extra):
            found.append(self._record(item))
            if len(found) >= limit:
                break
        return found

    def _set_uses(self, tenant_id: str, session_id: str, uses: Mapping[str, tuple[Use, str, str]]) -> int:
        updated = []
        for record in self._of_session(tenant_id, session_id):
            if record.record_id in uses:
                use, detail, agent = uses[record.record_id]
                updated.append(record.model_copy(update={"use": use, "use_detail": detail, "agent": agent}))
        self._write([{"PutRequest": {"Item": self._item(r)}} for r in updated])
        return len(updated)

    def _tenants(self) -> set[str]:
        items = dynamo_pages(self.dynamodb.scan, TableName=self.table, ProjectionExpression="pk")
        return {i["pk"]["S"].removesuffix("#injection") for i in items}

    def expire(self, older_than: datetime, keep_per_tenant: int) -> int:
        doomed: list[dict[str, Any]] = []
        for tenant in sorted(self._tenants()):
            keys = [
                {"pk": i["pk"], "sk": i["sk"]}
                for i in self._query(tenant, ScanIndexForward=False, ProjectionExpression="pk, sk")
            ]
            cutoff = older_than.astimezone(UTC).isoformat()
            doomed += [k for n, k in enumerate(keys) if n >= keep_per_tenant or k["sk"]["S"] < cutoff]
        self._write([{"DeleteRequest": {"Key": k}} for k in doomed])
        return len(doomed)

    def delete_session(self, tenant_id: str, session_id: str) -> int:
        keys = [
            {"pk": i["pk"], "sk": i["sk"]}
            for i in self._query(
                tenant_id,
                FilterExpression="session_id = :s",
                ExpressionAttributeValues={":s": {"S": session_id}},
            )
        ]
        self._write([{"DeleteRequest": {"Key": k}} for k in keys])
        return len(keys)

    def count(self, tenant_id: str | None = None) -> int:
        tenants = [tenant_id] if tenant_id is not None else sorted(self._tenants())
        return sum(1 for t in tenants for _ in self._query(t, ProjectionExpression="pk"))
