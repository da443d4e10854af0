"""The scratch memory's boundary model: one record per notable tool outcome, and what recall returns."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field, field_validator

from episodic.kernel.models import check_tenant

TTL_MIN_DAYS = 3
TTL_MAX_DAYS = 14
DEFAULT_TTL_DAYS = 7
MAX_SUMMARY_CHARS = 200
K_MIN = 3
K_MAX = 5


class ToolOutcome(StrEnum):
    OK = "ok"
    FAIL = "fail"


class ScratchRecord(BaseModel):
    """A notable tool outcome of one session: what ran, on what, and the error signature, in one line."""

    tenant_id: str
    session_id: str = Field(min_length=1, max_length=200)
    tool_name: str = Field(min_length=1, max_length=40)  # a kind: typecheck, tests, lint, build, edit, ...
    outcome: ToolOutcome
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    created_at: datetime  # when the tool ran (aware): the TTL counts from here

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str) -> str:
        return check_tenant(value)

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("created_at must carry a time zone")
        return value

    @property
    def record_id(self) -> str:
        """Content key: the same outcome of the same session is stored once (dedup across re-indexing)."""
        key = "\0".join((self.tenant_id, self.session_id, self.tool_name, self.outcome.value, self.summary))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


class ScratchHit(BaseModel):
    record: ScratchRecord
    similarity: float  # cosine of the query and the summary
