"""The failure memory's boundary model: an error a session met and got past, indexed by its signature."""

from __future__ import annotations

import hashlib
from datetime import datetime

from pydantic import BaseModel, Field, field_validator

from episodic.kernel.models import check_tenant


class FailureFix(BaseModel):
    """One error signature a session failed with, and the later passing run of the same check."""

    tenant_id: str
    session_id: str = Field(min_length=1, max_length=200)
    key: str = Field(min_length=1, max_length=200)  # the normalised signature, lower case: what is matched
    signature: str = Field(min_length=1, max_length=200)  # as shown
    check: str = Field(min_length=1, max_length=60)  # the check's program and subcommand (`go test`)
    failed_command: str = Field(max_length=100)
    passed_command: str = Field(max_length=100)
    edits: list[str] = Field(default_factory=list, max_length=5)  # file names edited in between
    diagnosis: str = Field(default="", max_length=240)  # the agent's own words about the cause
    failed_at: datetime
    passed_at: datetime
    project: str = ""

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str) -> str:
        return check_tenant(value)

    @field_validator("failed_at", "passed_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("times must carry a time zone")
        return value

    @property
    def record_id(self) -> str:
        """One record per (tenant, session, signature, check): re-indexing replaces, never duplicates."""
        key = "\0".join((self.tenant_id, self.session_id, self.key, self.check))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


class FailureMatch(BaseModel):
    """What the lookup found for a failing command: the fix to show, or why nothing is shown."""

    signature: str = ""  # the failing output's normalised signature ('' when none was found)
    fix: FailureFix | None = None
    reason: str = ""  # why nothing is shown (no signature, too generic, never met, never got past)
    sessions: int = 0  # how many earlier sessions of the tenant got past this signature
