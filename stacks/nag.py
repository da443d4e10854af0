"""cdk-nag v3 acknowledgments (CDK `Validations`): every one carries its reason."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str, findings: Sequence[str] = ()) -> None:
    """Acknowledge a rule on a construct (and its children); IAM findings are named one by one."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule_id} needs a reason")
    ids = [f"{rule_id}[{finding}]" for finding in findings] or [rule_id]
    Validations.of(scope).acknowledge(*(Acknowledgment(id=i, reason=reason) for i in ids))
