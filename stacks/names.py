"""Physical names derived from the stack, so that a destroy + deploy never collides with what the first stack
retained: `<namePrefix>-vectors-<8 hex of this stack's UUID>` and friends. The UUID is the one CloudFormation
puts in AWS::StackId, new for every stack created, stable across updates."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Fn

from stacks.config import StackConfig


def stack_suffix() -> str:
    """The first group of the stack's UUID (arn:...:stack/<name>/<uuid>), as a deploy-time token."""
    return Fn.select(0, Fn.split("-", Fn.select(2, Fn.split("/", Aws.STACK_ID))))


@dataclass(frozen=True)
class StackNames:
    prefix: str
    suffix: str

    @classmethod
    def of(cls, config: StackConfig) -> StackNames:
        return cls(prefix=config.name_prefix, suffix=stack_suffix())

    @property
    def vector_bucket(self) -> str:
        return f"{self.prefix}-vectors-{self.suffix}"

    @property
    def tokens_secret(self) -> str:
        return f"{self.prefix}/tokens-{self.suffix}"

    @property
    def idempotency_table(self) -> str:
        return f"{self.prefix}-idempotency-{self.suffix}"
